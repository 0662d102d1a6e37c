"""Where the pinned upstream binaries live, and building the missing ones.

The pins have one source of truth: the ``NAME_VERSION=${NAME_VERSION:-vX}``
lines of ``hack/build-bins.sh``. Binaries are cached by version under
``$ATOMIC_GANG_CACHE/bin`` (default ``~/.cache/atomic-gang/bin``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-bins.sh"

_PIN = re.compile(r"^([A-Z0-9]+)_VERSION=\$\{\1_VERSION:-(v[0-9][^}]*)\}", re.MULTILINE)

# Binary name -> (pin name, build-bins.sh component).
BINARIES: dict[str, tuple[str, str]] = {
    "etcd": ("ETCD", "etcd"),
    "kube-apiserver": ("K8S", "kube"),
    "kube-controller-manager": ("K8S", "kube"),
    "kube-scheduler": ("K8S", "kube"),
    "kubectl": ("K8S", "kube"),
    "kueue": ("KUEUE", "kueue"),
    "kwok": ("KWOK", "kwok"),
    "helm": ("HELM", "helm"),
    # Only the chart e2e tests run these (the webhook's certMode=certManager, for real).
    "cert-manager-controller": ("CERTMANAGER", "cert-manager"),
    "cert-manager-cainjector": ("CERTMANAGER", "cert-manager"),
}


class BinaryMissingError(RuntimeError):
    """A pinned binary is absent and could not be built."""


def parse_pins(script_text: str) -> dict[str, str]:
    """``{"ETCD": "v3.6.16", ...}`` from the build script's default pins."""
    return {m.group(1): m.group(2) for m in _PIN.finditer(script_text)}


def cache_dir() -> Path:
    return Path(os.environ.get("ATOMIC_GANG_CACHE", Path.home() / ".cache" / "atomic-gang"))


@dataclass(frozen=True)
class Bins:
    """Resolved paths of every pinned binary and of the upstream source trees."""

    root: Path
    pins: dict[str, str]

    @classmethod
    def load(cls) -> Bins:
        pins = parse_pins(BUILD_SCRIPT.read_text(encoding="utf-8"))
        for env_pin in list(pins):  # the script honours the same env overrides
            pins[env_pin] = os.environ.get(f"{env_pin}_VERSION", pins[env_pin])
        return cls(root=cache_dir(), pins=pins)

    def version(self, name: str) -> str:
        return self.pins[BINARIES[name][0]]

    def path(self, name: str) -> Path:
        return self.root / "bin" / f"{name}-{self.version(name)}"

    def source(self, module: str) -> Path:
        """Module source tree (``kueue`` or ``kwok``) linked by the build script."""
        return self.root / f"{module}-{self.version(module)}-src"

    def missing(self, names: tuple[str, ...] = tuple(BINARIES)) -> list[str]:
        return [n for n in names if not os.access(self.path(n), os.X_OK)]

    def ensure(self, names: tuple[str, ...] = tuple(BINARIES)) -> None:
        """Build whatever is missing (a cold build takes tens of minutes)."""
        components = sorted({BINARIES[n][1] for n in self.missing(names)})
        for module in ("kueue", "kwok"):  # the source links are needed too
            if module in names and not self.source(module).is_dir():
                components = sorted({*components, module})
        if not components:
            return
        print(f"devstack: building {', '.join(components)} via {BUILD_SCRIPT}", file=sys.stderr)
        done = subprocess.run([str(BUILD_SCRIPT), *components], check=False)
        still = self.missing(names)
        if done.returncode != 0 or still:
            raise BinaryMissingError(
                f"hack/build-bins.sh {' '.join(components)} exited {done.returncode};"
                f" still missing: {', '.join(still) or 'none'}"
            )
