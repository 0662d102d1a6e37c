"""Which pod templates reach for gang nodes, and which UPDATE may add such a reach."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys as k
from atomic_gang import template
from atomic_gang.errors import Collector
from atomic_gang.objects import MalformedJobError


def _pod(**pod: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "i"}], **pod}


def _expr(key: str, op: str = "In", values: list[str] | None = None) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": values or ["x"]}


def _required(*exprs: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(exprs)}]
    key = template.REQUIRED
    return {"nodeAffinity": {key: {"nodeSelectorTerms": terms}}}


@pytest.mark.parametrize(
    ("pod", "reasons"),
    [
        pytest.param({}, [], id="nothing"),
        pytest.param({"nodeSelector": {"disk": "ssd"}}, [], id="other-selector"),
        pytest.param({"nodeSelector": {k.POOL: "p"}}, ["ReservedSelectorKey"], id="pool"),
        pytest.param({"nodeSelector": {k.GROUP: "g"}}, ["ReservedSelectorKey"], id="group"),
        pytest.param({"affinity": _required(_expr(k.POOL))}, ["ReservedSelectorKey"], id="aff"),
        pytest.param({"affinity": _required(_expr("zone"))}, [], id="aff-other"),
        pytest.param(
            {"affinity": _required(_expr("zone"), _expr(k.GROUP, "Exists"))},
            ["ReservedSelectorKey"],
            id="second-expression",
        ),
        pytest.param({"tolerations": [{"key": k.GANG_TAINT}]}, ["ReservedToleration"], id="eq"),
        pytest.param(
            {"tolerations": [{"operator": "Exists"}]}, ["ReservedToleration"], id="tolerate-all"
        ),
        pytest.param(
            {"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]},
            ["ReservedToleration"],  # the gang taint is NoExecute
            id="all-noexecute",
        ),
        pytest.param(
            {"tolerations": [{"key": k.GANG_TAINT, "effect": "NoExecute"}]},
            ["ReservedToleration"],
            id="noexecute",
        ),
        pytest.param(
            {"tolerations": [{"key": k.GANG_TAINT, "effect": "NoSchedule"}]},
            ["ReservedToleration"],  # gang nodes launched before the NoExecute taint
            id="noschedule",
        ),
        pytest.param(
            {"tolerations": [{"operator": "Exists", "effect": "PreferNoSchedule"}]},
            [],
            id="prefer-no-schedule-only",
        ),
        pytest.param({"tolerations": [{"key": "gpu", "operator": "Exists"}]}, [], id="other"),
    ],
)
def test_claims(pod: dict[str, Any], reasons: list[str]) -> None:
    assert [c.reason for c in template.claims(_pod(**pod))] == reasons


def test_claims_name_their_field() -> None:
    (claim,) = template.claims(_pod(affinity=_required(_expr("zone"), _expr(k.POOL))))
    assert claim.field == (
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[1]"
    )
    assert claim.value == "In ['x']"


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param({"tolerations": {"key": "x"}}, id="tolerations-object"),
        pytest.param({"tolerations": ["x"]}, id="toleration-string"),
        pytest.param({"nodeSelector": ["x"]}, id="selector-list"),
        pytest.param({"tolerations": [{}] * (template.MAX_ENTRIES + 1)}, id="too-many"),
    ],
)
def test_malformed_templates_are_malformed(pod: dict[str, Any]) -> None:
    with pytest.raises(MalformedJobError):
        template.claims(_pod(**pod))


def _update(
    old: dict[str, Any], new: dict[str, Any], *, by_kueue: bool = False, may_pin: bool = False
) -> list[str]:
    out = Collector()
    template.check_update(old, new, by_kueue=by_kueue, may_pin=may_pin, out=out)
    return [v.reason for v in out.violations]


def test_only_kueue_adds_or_drops_claims_anyone_may_keep_them() -> None:
    bare = _pod()
    admitted = _pod(nodeSelector={k.POOL: "p"}, tolerations=[{"key": k.GANG_TAINT}])
    assert _update(bare, admitted) == ["ReservedSelectorKey", "ReservedToleration"]
    assert _update(bare, admitted, by_kueue=True) == []
    assert _update(admitted, admitted) == []  # e.g. a label change on an admitted Job
    assert _update(admitted, bare) == ["ReservedSelectorKey", "ReservedToleration"]
    assert _update(admitted, bare, by_kueue=True) == []  # Kueue's stop restores the template
    moved = _pod(nodeSelector={k.POOL: "other"}, tolerations=[{"key": k.GANG_TAINT}])
    # Moving to another pool adds one claim and drops one: both are Kueue's to make.
    assert _update(admitted, moved) == ["ReservedSelectorKey", "ReservedSelectorKey"]


_PINNED = {k.POOL: "p", k.GROUP: "p-g1"}
_OURS = {"key": k.GANG_TAINT, "operator": "Equal", "value": "p"}


@pytest.mark.parametrize(
    ("pod", "pinned"),
    [
        pytest.param({"nodeSelector": _PINNED, "tolerations": [_OURS]}, True, id="podsetupdate"),
        pytest.param({"nodeSelector": _PINNED}, True, id="selector-only"),
        pytest.param(
            {"nodeSelector": _PINNED, "tolerations": [{"key": k.GANG_TAINT, "value": "p"}]},
            True,
            id="operator-defaults-to-equal",
        ),
        pytest.param(
            {"nodeSelector": _PINNED, "tolerations": [{"key": k.GANG_TAINT, "operator": "Exists"}]},
            True,  # a ResourceFlavor's toleration: the selector still holds the pod to p
            id="flavor-exists",
        ),
        pytest.param(
            {"nodeSelector": _PINNED, "tolerations": [{"operator": "Exists"}]},
            True,  # as the gang-node policy judges a Pod
            id="tolerate-all-with-selector",
        ),
        pytest.param({"nodeSelector": {k.POOL: "p"}, "tolerations": [_OURS]}, False, id="pool"),
        pytest.param({"nodeSelector": {k.GROUP: "p-g1"}}, False, id="group-only"),
        pytest.param({"nodeSelector": {k.POOL: "", k.GROUP: "g"}}, False, id="empty-pool"),
        pytest.param({"tolerations": [_OURS]}, False, id="toleration-only"),
        pytest.param({"tolerations": [{"operator": "Exists"}]}, False, id="tolerate-all-alone"),
        pytest.param(
            {"nodeSelector": _PINNED, "tolerations": [_OURS, {**_OURS, "value": "q"}]},
            False,
            id="another-pools-toleration",
        ),
        pytest.param(
            {
                "nodeSelector": _PINNED,
                "tolerations": [{**_OURS, "operator": ""}, {"key": k.GANG_TAINT, "value": "q"}],
            },
            False,
            id="empty-operator-is-equal",
        ),
        pytest.param(
            {"affinity": _required(_expr(k.POOL, values=["p"]), _expr(k.GROUP, values=["g"]))},
            False,  # pinned means the nodeSelector our podSetUpdates write
            id="affinity-instead-of-selector",
        ),
    ],
)
def test_pinned_is_the_gang_node_policys_test(pod: dict[str, Any], pinned: bool) -> None:
    assert template.pinned(_pod(**pod)) is pinned


def _create(pod: dict[str, Any], *, may_pin: bool) -> list[str]:
    out = Collector()
    template.check_create(pod, out, may_pin=may_pin)
    return [v.reason for v in out.violations]


def test_a_pinned_template_passes_only_for_the_writer_that_may_pin() -> None:
    admitted = _pod(nodeSelector=_PINNED, tolerations=[_OURS])
    assert _create(admitted, may_pin=False) == [
        "ReservedSelectorKey",
        "ReservedSelectorKey",
        "ReservedToleration",
    ]
    assert _create(admitted, may_pin=True) == []
    half = _pod(nodeSelector={k.POOL: "p"}, tolerations=[_OURS])
    assert _create(half, may_pin=True) == ["ReservedSelectorKey", "ReservedToleration"]
    assert _create(_pod(), may_pin=True) == []


def test_the_writer_that_may_pin_may_pin_or_repin_and_nothing_else() -> None:
    bare = _pod()
    admitted = _pod(nodeSelector=_PINNED, tolerations=[_OURS])
    assert _update(bare, admitted, may_pin=True) == []  # the JobSet controller's resume
    regrouped = _pod(nodeSelector={k.POOL: "p", k.GROUP: "p-g2"}, tolerations=[_OURS])
    assert _update(admitted, regrouped, may_pin=True) == []  # resumed on a fresh gang
    assert _update(admitted, admitted, may_pin=True) == []  # its suspend keeps the claims
    foreign = _pod(nodeSelector=_PINNED, tolerations=[_OURS, {**_OURS, "value": "q"}])
    assert _update(admitted, foreign, may_pin=True) == ["ReservedToleration"]
    # Dropping the claims leaves nothing pinned: only Kueue may.
    assert _update(admitted, bare, may_pin=True) == [
        "ReservedSelectorKey",
        "ReservedSelectorKey",
        "ReservedToleration",
    ]
