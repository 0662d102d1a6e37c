"""Gang nodes belong to their gang: no Job template may reach for them.

A pod reaches gang nodes by tolerating the gang taint (``atomic-gang.k8s.aws/gang``,
or an empty key with operator ``Exists``, which tolerates every taint; effect empty,
``NoExecute`` or, for nodes from before, ``NoSchedule``) or by selecting the pool or
group label (``nodeSelector``, or a required or preferred node-affinity expression).
Only Kueue puts those into a Job's template, when it admits the Job with our
podSetUpdates. So a CREATE that carries one is denied, and so is an UPDATE that adds or
drops one unless Kueue makes it. Two writers copy them on, and only ``pinned`` (to one
pool and its group): the JobSet controller, into the Jobs of a JobSet Kueue admitted,
and the Kubeflow Trainer, into the JobSet of a TrainJob Kueue admitted.
The chart's ValidatingAdmissionPolicy holds Pods to the same rule
(templates/gang-node-policy.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from atomic_gang import keys
from atomic_gang.errors import Collector, Reason, clip
from atomic_gang.objects import MalformedJobError, field_list, field_map, field_str, items

BASE = "spec.template.spec"
NODE_AFFINITY = f"{BASE}.affinity.nodeAffinity"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
# More entries than any real template holds: refused unreviewed, so a hostile list
# cannot buy unbounded work (the API server sets no such limit itself).
MAX_ENTRIES = 512
_RESERVED = frozenset(keys.SELECTOR_KEYS)
_TOLERATED_EFFECTS = ("", *keys.GANG_TAINT_EFFECTS)
_WHY: dict[Reason, tuple[str, str]] = {
    "ReservedSelectorKey": (
        "selects gang nodes; only Kueue sets it, from the provisioner's podSetUpdates",
        "remove it from the pod template: Kueue adds it once the gang's own nodes are Ready",
    ),
    "ReservedToleration": (
        f"tolerates the gang taint {keys.GANG_TAINT}; only Kueue adds that, for the gang "
        "that owns the nodes",
        "remove it; to tolerate other taints, name their keys (an empty key with operator "
        "Exists tolerates every taint)",
    ),
}


class Claim(NamedTuple):
    """One way a pod template reaches for gang nodes."""

    reason: Reason
    key: str
    value: str  # what it asks for, e.g. "In [a, b]" or "Exists NoSchedule"
    field: str

    @property
    def identity(self) -> tuple[str, str, str]:
        """What the claim asks for, wherever it sits in the lists."""
        return (self.reason, self.key, self.value)


def _bounded(value: list[Any], where: str) -> list[Any]:
    if len(value) > MAX_ENTRIES:
        raise MalformedJobError(f"{where} has more than {MAX_ENTRIES} entries")
    return value


def _selector(pod: Mapping[str, Any], out: list[Claim]) -> None:
    selector = field_map(pod, "nodeSelector", BASE)
    for key in keys.SELECTOR_KEYS:
        if key in selector:
            value = clip(str(selector[key]))
            out.append(Claim("ReservedSelectorKey", key, value, f"{BASE}.nodeSelector[{key}]"))


def _expressions(term: Mapping[str, Any], where: str, out: list[Claim]) -> None:
    exprs = items(_bounded(field_list(term, "matchExpressions", where), where), where)
    for j, expr in enumerate(exprs):
        key = field_str(expr, "key", f"{where}.matchExpressions[{j}]")
        if key in _RESERVED:
            values = _bounded(field_list(expr, "values", where), where)
            shown = f"{field_str(expr, 'operator', where)} {clip(str(values))}".strip()
            out.append(Claim("ReservedSelectorKey", key, shown, f"{where}.matchExpressions[{j}]"))


def _affinity(pod: Mapping[str, Any], out: list[Claim]) -> None:
    node = field_map(field_map(pod, "affinity", BASE), "nodeAffinity", f"{BASE}.affinity")
    required = field_map(node, REQUIRED, NODE_AFFINITY)
    where = f"{NODE_AFFINITY}.{REQUIRED}.nodeSelectorTerms"
    for i, term in enumerate(
        items(_bounded(field_list(required, "nodeSelectorTerms", where), where), where)
    ):
        _expressions(term, f"{where}[{i}]", out)
    where = f"{NODE_AFFINITY}.{PREFERRED}"
    for i, weighted in enumerate(items(_bounded(field_list(node, PREFERRED, where), where), where)):
        _expressions(
            field_map(weighted, "preference", f"{where}[{i}]"), f"{where}[{i}].preference", out
        )


def _tolerations(pod: Mapping[str, Any], out: list[Claim]) -> None:
    where = f"{BASE}.tolerations"
    for i, t in enumerate(items(_bounded(field_list(pod, "tolerations", BASE), where), where)):
        here = f"{where}[{i}]"
        key, op = field_str(t, "key", here), field_str(t, "operator", here) or "Equal"
        effect = field_str(t, "effect", here)
        if effect not in _TOLERATED_EFFECTS or key not in ("", keys.GANG_TAINT):
            continue
        if key or op == "Exists":  # an empty key tolerates every taint only with Exists
            shown = " ".join(x for x in (op, clip(field_str(t, "value", here)), effect) if x)
            out.append(Claim("ReservedToleration", key or "*", shown, here))


def claims(pod: Mapping[str, Any]) -> list[Claim]:
    """Every way a pod spec (a Job's ``spec.template.spec``) reaches for gang nodes."""
    out: list[Claim] = []
    if pod.get("nodeSelector"):
        _selector(pod, out)
    if pod.get("affinity"):
        _affinity(pod, out)
    if pod.get("tolerations"):
        _tolerations(pod, out)
    return out


def pinned(pod: Mapping[str, Any]) -> bool:
    """The pod spec selects a pool and a group (``nodeSelector``, as our podSetUpdates
    do), and every ``Equal`` toleration of the gang taint names that pool. The chart's
    gang-node policy calls a Pod ``pinned`` by the same test."""
    selector = field_map(pod, "nodeSelector", BASE)
    pool, group = selector.get(keys.POOL), selector.get(keys.GROUP)
    if not pool or not group:
        return False
    where = f"{BASE}.tolerations"
    for i, t in enumerate(items(_bounded(field_list(pod, "tolerations", BASE), where), where)):
        here = f"{where}[{i}]"
        if field_str(t, "key", here) != keys.GANG_TAINT:
            continue
        operator = field_str(t, "operator", here) or "Equal"
        if operator == "Equal" and field_str(t, "value", here) != pool:
            return False
    return True


def _report(claim: Claim, out: Collector) -> None:
    message, hint = _WHY[claim.reason]
    out.add(claim.key, claim.reason, message, claim.value, hint, claim.field)


def check_create(pod: Mapping[str, Any], out: Collector, *, may_pin: bool = False) -> None:
    """Every claim is denied; with ``may_pin`` (the JobSet controller creating its
    JobSet's Job, the Trainer its TrainJob's JobSet) a ``pinned`` template's claims
    pass."""
    found = claims(pod)
    if may_pin and found and pinned(pod):
        return
    for claim in found:
        _report(claim, out)


def check_update(
    old_pod: Mapping[str, Any],
    new_pod: Mapping[str, Any],
    *,
    by_kueue: bool,
    out: Collector,
    may_pin: bool = False,
    may_clear: bool = False,
) -> None:
    """Only Kueue changes a Job's claims: an UPDATE by anyone else that adds one, or
    drops one (the pods would lose their pinning to the gang's pool and group), is
    denied. With ``may_pin`` (the JobSet controller resuming its JobSet's Job, with the
    claims Kueue merged into the JobSet) any change that leaves the template ``pinned``
    passes; with ``may_clear`` (the Trainer suspending its TrainJob's JobSet once Kueue
    took its claims back) so does one that leaves it no claim at all."""
    if by_kueue or (may_pin and pinned(new_pod)):
        return
    new, old = claims(new_pod), claims(old_pod)
    if may_clear and not new:
        return
    before, after = {c.identity for c in old}, {c.identity for c in new}
    for claim in new:
        if claim.identity not in before:
            _report(claim, out)
    for claim in old:
        if claim.identity not in after:
            out.add(
                claim.key,
                claim.reason,
                "is one of the gang's node claims, which only Kueue changes (it removes "
                "them when it suspends the Job)",
                claim.value,
                "leave the pod template's claims as Kueue set them",
                claim.field,
            )
