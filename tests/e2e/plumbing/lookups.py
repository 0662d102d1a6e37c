"""Whether an object is gone, told apart from kubectl failing for another reason."""

from __future__ import annotations

from tests.e2e.kube import Kube


def gone(kube: Kube, *args: str) -> bool:
    """True once ``kubectl get <args>`` answers NotFound (any other failure raises)."""
    done = kube.run("get", *args, check=False)
    if done.returncode == 0:
        return False
    if "NotFound" not in done.stderr:
        raise AssertionError(f"kubectl get {' '.join(args)} failed:\n{done.stderr}")
    return True
