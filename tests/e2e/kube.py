"""Test-side access to the local cluster through the real, pinned kubectl.

Every wait polls a condition until a deadline; nothing sleeps in place of
synchronisation.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from atomic_gang_devstack import dev_objects

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """A condition did not hold before its deadline."""


@dataclass(frozen=True)
class Kube:
    kubectl: Path
    kubeconfig: Path
    cache_dir: Path

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            str(self.kubectl),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache_dir}",
            *args,
        ]
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, check=False, timeout=60
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
        return done

    def apply(self, obj: dict[str, Any], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl apply -f -`` of one object, as a user would run it."""
        return self.run("apply", "-f", "-", stdin=yaml.safe_dump(obj), check=check)

    def get(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    def items(self, *args: str) -> list[dict[str, Any]]:
        return list(self.get(*args)["items"])


def wait_for(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.2
) -> T:
    """Poll ``probe`` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise WaitTimeoutError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")


def queued_namespace(kube: Kube, name: str) -> None:
    """Namespace ``name`` with the LocalQueue ``atomic-gang-queue``, once its default
    ServiceAccount exists (Pods cannot be created before the serviceaccount controller
    made it)."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.apply(dev_objects.local_queue(name))
    wait_for(
        lambda: (
            kube.run("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0
        ),
        timeout=30,
        what=f"serviceaccount default in {name}",
    )


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def has_condition(obj: dict[str, Any], ctype: str, status: str = "True") -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == status
