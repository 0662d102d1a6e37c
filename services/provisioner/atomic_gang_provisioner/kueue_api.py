"""Which Kueue we can work with, checked once at start-up from API discovery.

We read and write Workloads and AdmissionChecks as ``kueue.x-k8s.io/v1beta2``,
which Kueue serves from v0.15 and stores from v0.16; the oldest release we test is
the spec's floor. A cluster whose Kueue does not serve that version (or that has no
Kueue) stops the provisioner at start with the reason, rather than with a 404 from
the first informer.
"""

from __future__ import annotations

from atomic_gang.resources import KUEUE, WORKLOADS

VERSION = WORKLOADS.version  # v1beta2
FLOOR = "v0.18.3"
TESTED = ("v0.18.3", "v0.19.1")


def problem(served: tuple[str, ...]) -> str:
    """Why the provisioner cannot work with a cluster that serves ``served`` versions of
    Kueue's API group ("" when it can)."""
    if VERSION in served:
        return ""
    if not served:
        found = f"the cluster serves no {KUEUE} API (Kueue is not installed)"
    else:
        found = f"the cluster serves {KUEUE} {', '.join(served)} but not {VERSION}"
    return (
        f"{found}; atomic-gang-provisioner needs {KUEUE}/{VERSION}, served by Kueue "
        f"{FLOOR} or newer (tested: {', '.join(TESTED)}). Install or upgrade Kueue, "
        "then start the provisioner again"
    )
