"""A thin wrapper over the pinned ``kubectl`` binary, bound to one kubeconfig.

The launcher applies everything with server-side apply under one field
manager, so re-running ``up`` against a live stack is a no-op.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atomic_gang_devstack import waits

FIELD_MANAGER = "atomic-gang-devstack"


class KubectlError(RuntimeError):
    """kubectl exited non-zero; the message holds its stderr."""

    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        self.args_, self.code, self.stderr = tuple(args), code, stderr
        super().__init__(f"kubectl {' '.join(args)} exited {code}: {stderr.strip()}")


@dataclass(frozen=True)
class Kubectl:
    binary: Path
    kubeconfig: Path
    cache_dir: Path | None = None  # discovery cache; default ~/.kube/cache

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        if self.cache_dir is not None:
            argv.insert(2, f"--cache-dir={self.cache_dir}")
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, check=False, timeout=timeout
        )
        if check and done.returncode != 0:
            raise KubectlError(args, done.returncode, done.stderr)
        return done

    def apply(self, objects: Iterable[dict[str, Any]], *, force: bool = True) -> None:
        """Server-side apply of ``objects`` in the given order (namespaces first)."""
        docs = list(objects)
        if not docs:
            return
        args = ["apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-"]
        if force:
            args.insert(2, "--force-conflicts")
        # A stream of JSON documents: PyYAML needs seconds to dump Kueue's 2 MB of
        # CRDs, and a v1 List makes kubectl fetch and parse all of /openapi/v2.
        self.run(*args, stdin="\n---\n".join(json.dumps(d) for d in docs))

    def get(self, *args: str) -> Any:
        """``kubectl get ... -o json`` decoded."""
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    def exists(self, *args: str) -> bool:
        return self.run("get", *args, "--ignore-not-found", "-o", "name", check=False).stdout != ""

    def wait_established(self, crd_names: Iterable[str], *, timeout: float = 60.0) -> None:
        """Poll until every CRD in ``crd_names`` (bare names) reports Established.

        ``kubectl wait --for=condition=Established`` fails at once, instead of
        waiting, when it reads a CRD whose status has no conditions yet: the
        window between create and the apiserver's first status write.
        """
        pending = set(crd_names)

        def all_established() -> bool:
            pending.difference_update(
                c["metadata"]["name"] for c in self.get("crd")["items"] if _established(c)
            )
            return not pending

        try:
            waits.wait_until(all_established, name="kubectl", what="Established", timeout=timeout)
        except waits.ComponentFailedError as exc:
            missing = tuple(sorted(pending))
            raise KubectlError(("wait-established", *missing), 1, exc.reason) from exc


def _established(crd: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )
