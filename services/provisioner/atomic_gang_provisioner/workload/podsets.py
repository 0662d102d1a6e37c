"""How a gang maps onto its Workload's PodSets: each gang role is one PodSet, named
after it ("main" for a Job, the replicatedJob's name for a JobSet), and the gang's N
is the sum of their counts. Kueue sized the Workload from the object when it was
created; the object's rules were checked by the webhook, and are checked again here
against what Kueue actually admits, so an object created while the webhook was down
cannot launch the wrong N."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from atomic_gang import keys, template
from atomic_gang.gang_object import Gang
from atomic_gang_provisioner.views.resource_flavor import ResourceFlavor
from atomic_gang_provisioner.workload.view import WorkloadView


@dataclass(frozen=True, slots=True)
class Fit:
    """The Workload's PodSets hold exactly the gang: what its largest gang pod asks of a
    Node (the claim records it)."""

    requests: dict[str, int]


@dataclass(frozen=True, slots=True)
class Misfit:
    """Why the Workload's PodSets cannot be the gang's (the check is Rejected with it)."""

    message: str


def fit(gang: Gang, wl: WorkloadView, claiming: Collection[str]) -> Fit | Misfit:
    """How the Workload's PodSets map onto the gang: each role one PodSet, their pods the
    gang's count, nothing else on a flavor that claims gang nodes."""
    why = mismatch(gang, wl) or others_on_gang_flavors(gang, wl, claiming)
    return Misfit(why) if why else Fit(largest_requests(gang, wl))


def mismatch(gang: Gang, wl: WorkloadView) -> str:
    """Why the Workload's PodSets do not hold exactly the gang ("" when they do)."""
    found = ", ".join(f"{name}: {count}" for name, count in wl.pod_sets.items()) or "none"
    missing = [r for r in gang.roles if r not in wl.pod_sets]
    if missing:
        names = ", ".join(repr(n) for n in missing)
        return (
            f"expected a PodSet named {names} for the gang's {gang.kind} "
            f"(the Workload's PodSets: {found})"
        )
    pods = sum(wl.pod_sets[r] for r in gang.roles)
    if pods == gang.spec.count:
        return ""
    roles = "; ".join(f"{r}: {wl.pod_sets[r]} pods" for r in gang.roles)
    return (
        f"CountMismatch: count is {gang.spec.count} but the Workload's gang PodSets hold "
        f"{pods} pods ({roles}); one gang node per pod, so the two must be equal. Set the "
        f"count to {pods}, or change the gang roles or the replicas"
    )


def flavor_claims_gang_nodes(flavor: ResourceFlavor) -> bool:
    """Whether a ResourceFlavor selects gang nodes (our managed, pool or group label)
    or tolerates the gang taint: what Kueue gives every PodSet on it."""
    labels = flavor.node_labels
    pod = {"nodeSelector": labels, "tolerations": flavor.tolerations}
    return keys.MANAGED in labels or bool(template.claims(pod))


def others_on_gang_flavors(gang: Gang, wl: WorkloadView, claiming: Collection[str]) -> str:
    """Why the PodSets outside the gang cannot run ("" when they can): Kueue gives each
    PodSet its flavor's nodeLabels and tolerations, and a flavor that selects gang
    nodes or tolerates the gang taint (``claiming``) would hold a JobSet's driver to
    gang nodes, where the gang-node policy refuses its pods."""
    roles = set(gang.roles)
    found = sorted(
        {
            (name, flavor)
            for name, flavors in wl.pod_set_flavors.items()
            if name not in roles
            for flavor in flavors
            if flavor in claiming
        }
    )
    if not found:
        return ""
    named = ", ".join(f"PodSet {p} on ResourceFlavor {f}" for p, f in found)
    return (
        f"{named}: the flavor selects gang nodes or tolerates the gang taint, so pods "
        f"outside the gang roles ({', '.join(sorted(roles))}) would be held to gang nodes, "
        "where the gang-node policy refuses them. Remove the flavor's gang nodeLabels and "
        "toleration (the chart's flavor carries none: the podSetUpdates pin the gang "
        "roles), or list these roles in atomic-gang.k8s.aws/gang-roles"
    )


def largest_requests(gang: Gang, wl: WorkloadView) -> dict[str, int]:
    """What the largest gang pod asks of a Node, resource by resource, read from the
    PodSets Kueue admits (for a TrainJob, only they know the runtime's pods)."""
    out: dict[str, int] = {}
    for role in gang.roles:
        for name, amount in wl.pod_set_requests.get(role, {}).items():
            out[name] = max(out.get(name, 0), amount)
    return dict(sorted(out.items()))
