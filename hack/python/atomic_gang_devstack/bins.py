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
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-bins.sh"

NODE_DEPS_SCRIPT = REPO_ROOT / "hack" / "install-node-deps.sh"

_PIN = re.compile(r"^([A-Z0-9_]+)_VERSION=\$\{\1_VERSION:-(v[0-9][^}]*)\}", re.MULTILINE)
_BUILD_KEY = re.compile(r"^([A-Z0-9]+)_BUILD=\$\{\1_BUILD:-([a-z0-9]+)\}", re.MULTILINE)

# Binary name -> (pin name, build-bins.sh component).
BINARIES: dict[str, tuple[str, str]] = {
    "etcd": ("ETCD", "etcd"),
    "kube-apiserver": ("K8S", "kube"),
    "kube-controller-manager": ("K8S", "kube"),
    "kube-scheduler": ("K8S", "kube"),
    "kubectl": ("K8S", "kube"),
    "kueue": ("KUEUE", "kueue"),
    "kwok": ("KWOK", "kwok"),
    "jobset": ("JOBSET", "jobset"),  # its controller (the module root's main package)
    "trainer": ("TRAINER", "trainer"),  # Kubeflow Trainer's cmd/trainer-controller-manager
    "helm": ("HELM", "helm"),
    # Only the chart e2e tests run these (the webhook's certMode=certManager, for real).
    "cert-manager-controller": ("CERTMANAGER", "cert-manager"),
    "cert-manager-cainjector": ("CERTMANAGER", "cert-manager"),
    # The real node (hack/install-node-deps.sh adds runc, CNI plugins, buildah).
    "kubelet": ("K8S", "kubelet"),
    "containerd": ("CONTAINERD", "containerd"),
    "containerd-shim-runc-v2": ("CONTAINERD", "containerd"),
    "ctr": ("CONTAINERD", "containerd"),
    "kube-score": ("KUBESCORE", "kube-score"),
    # Checks and unit-tests the chart's alert rules; lints both services' /metrics.
    "promtool": ("PROMTOOL", "promtool"),
    # nodeadm's own user-data parser and validation over what our launch path sends.
    "nodeadm-check": ("NODEADM", "nodeadm-check"),
    # A container registry on loopback: make docker-push's destination (e2e).
    "registry": ("REGISTRY", "registry"),
}
# Module source trees the build script links (name -> pin): charts, CRDs, kwok's stages,
# the Trainer's runtimes.
SOURCES: dict[str, str] = {
    "kueue": "KUEUE",
    "kwok": "KWOK",
    "lws": "LWS",
    "jobset": "JOBSET",
    "trainer": "TRAINER",
}
# What most of the stack needs; the real node's binaries are asked for by name.
CONTROL_PLANE: tuple[str, ...] = tuple(
    n
    for n, (_, c) in BINARIES.items()
    if c not in ("kubelet", "containerd", "kube-score", "promtool", "nodeadm-check", "registry")
)
NODE: tuple[str, ...] = ("kubelet", "containerd", "containerd-shim-runc-v2", "ctr")


class BinaryMissingError(RuntimeError):
    """A pinned binary is absent and could not be built."""


def parse_pins(script_text: str) -> dict[str, str]:
    """``{"ETCD": "v3.6.16", ...}`` from the build script's default pins."""
    return {m.group(1): m.group(2) for m in _PIN.finditer(script_text)}


def parse_build_keys(script_text: str) -> dict[str, str]:
    """``{"HELM": "rel1"}``: build-flag revisions that are part of a binary's cache name."""
    return {m.group(1): m.group(2) for m in _BUILD_KEY.finditer(script_text)}


def cache_dir() -> Path:
    return Path(os.environ.get("ATOMIC_GANG_CACHE", Path.home() / ".cache" / "atomic-gang"))


@dataclass(frozen=True)
class Bins:
    """Resolved paths of every pinned binary and of the upstream source trees."""

    root: Path
    pins: dict[str, str]
    build_keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Bins:
        text = BUILD_SCRIPT.read_text(encoding="utf-8")
        pins, keys = parse_pins(text), parse_build_keys(text)
        for env_pin in list(pins):  # the script honours the same env overrides
            pins[env_pin] = os.environ.get(f"{env_pin}_VERSION", pins[env_pin])
        for env_key in list(keys):
            keys[env_key] = os.environ.get(f"{env_key}_BUILD", keys[env_key])
        return cls(root=cache_dir(), pins=pins, build_keys=keys)

    def with_kueue(self, version: str) -> Bins:
        """The same pins with another Kueue (``KUEUE_FLOOR`` is the oldest we support)."""
        return Bins(
            root=self.root, pins={**self.pins, "KUEUE": version}, build_keys=self.build_keys
        )

    def floor(self) -> Bins:
        """The pins with the floor Kueue (``KUEUE_FLOOR_VERSION``) in place of the default."""
        return self.with_kueue(self.pins["KUEUE_FLOOR"])

    def version(self, name: str) -> str:
        return self.pins[BINARIES[name][0]]

    def path(self, name: str) -> Path:
        key = self.build_keys.get(name.upper().replace("-", ""))
        suffix = f"-{key}" if key else ""
        return self.root / "bin" / f"{name}-{self.version(name)}{suffix}"

    def source(self, module: str) -> Path:
        """Module source tree (``kueue``, ``kwok``, ``lws``, ``jobset`` or ``trainer``) linked
        by the build script."""
        return self.root / f"{module}-{self.pins[SOURCES[module]]}-src"

    def ensure_sources(self, modules: tuple[str, ...]) -> None:
        """Link the module source trees that are missing (a download, no build)."""
        missing = tuple(m for m in modules if not self.source(m).is_dir())
        if missing:
            self._build(missing, names=())

    def missing(self, names: tuple[str, ...] = tuple(BINARIES)) -> list[str]:
        return [n for n in names if not os.access(self.path(n), os.X_OK)]

    def ensure(self, names: tuple[str, ...] = CONTROL_PLANE) -> None:
        """Build whatever is missing (a cold build takes tens of minutes)."""
        if set(names) & set(NODE):
            install_node_deps()
        components = sorted({BINARIES[n][1] for n in self.missing(names)})
        for module in SOURCES:  # the source links are needed too
            if module in names and not self.source(module).is_dir():
                components = sorted({*components, module})
        if components:
            self._build(tuple(components), names=names)

    def _build(self, components: tuple[str, ...], *, names: tuple[str, ...]) -> None:
        print(f"devstack: building {', '.join(components)} via {BUILD_SCRIPT}", file=sys.stderr)
        # The script builds what these pins name (a Bins may carry another Kueue).
        pins = {f"{pin}_VERSION": version for pin, version in self.pins.items()}
        done = subprocess.run(
            [str(BUILD_SCRIPT), *components], check=False, env={**os.environ, **pins}
        )
        still = self.missing(names) + [
            c for c in components if c in SOURCES and not self.source(c).is_dir()
        ]
        if done.returncode != 0 or still:
            raise BinaryMissingError(
                f"hack/build-bins.sh {' '.join(components)} exited {done.returncode};"
                f" still missing: {', '.join(still) or 'none'}"
            )


def install_node_deps() -> None:
    """runc, CNI plugins, buildah, debootstrap from Debian's packages, when missing."""
    done = subprocess.run([str(NODE_DEPS_SCRIPT)], check=False)
    if done.returncode != 0:
        raise BinaryMissingError(f"{NODE_DEPS_SCRIPT} exited {done.returncode}")
