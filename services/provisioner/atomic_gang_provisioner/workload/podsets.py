"""How a gang maps onto its Workload's PodSets: each gang role is one PodSet, named
after it ("main" for a Job, the replicatedJob's name for a JobSet), and the gang's N
is the sum of their counts. Kueue sized the Workload from the object when it was
created; the object's rules were checked by the webhook, and are checked again here
against what Kueue actually admits, so an object created while the webhook was down
cannot launch the wrong N."""

from __future__ import annotations

from atomic_gang.devices import extended_requests
from atomic_gang.gang_object import Gang
from atomic_gang_provisioner.workload.view import WorkloadView


def mismatch(gang: Gang, wl: WorkloadView) -> str:
    """Why the Workload's PodSets do not hold exactly the gang ("" when they do)."""
    found = ", ".join(f"{name}: {count}" for name, count in wl.pod_sets.items()) or "none"
    missing = [r.name for r in gang.roles if r.name not in wl.pod_sets]
    if missing:
        names = ", ".join(repr(n) for n in missing)
        return (
            f"expected a PodSet named {names} for the gang's {gang.kind} "
            f"(the Workload's PodSets: {found})"
        )
    pods = sum(wl.pod_sets[r.name] for r in gang.roles)
    if pods == gang.spec.count:
        return ""
    roles = "; ".join(f"{r.name}: {wl.pod_sets[r.name]} pods" for r in gang.roles)
    return (
        f"CountMismatch: count is {gang.spec.count} but the Workload's gang PodSets hold "
        f"{pods} pods ({roles}); one gang node per pod, so the two must be equal. Set the "
        f"count to {pods}, or change the gang roles or the replicas"
    )


def largest_requests(gang: Gang) -> dict[str, int]:
    """What the largest gang pod asks of a Node, resource by resource."""
    out: dict[str, int] = {}
    for role in gang.roles:
        for name, amount in extended_requests(role.pod).items():
            out[name] = max(out.get(name, 0), amount)
    return dict(sorted(out.items()))
