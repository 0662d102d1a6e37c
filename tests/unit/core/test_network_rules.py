"""The network annotations: placement, placement-group-name, efa, max-spread."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import GangValidationError, validate_job
from atomic_gang import keys as k
from tests.support.jobs import gang_job, settings

S = settings(allowedPlacementGroups=["team-*", "pg"])
FLEET = {k.MODE: "fleet", k.PLACEMENT: "cluster"}


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param({k.PLACEMENT: "cluster"}, {"placement": "cluster"}, id="placement"),
        pytest.param(
            {k.PLACEMENT_GROUP_NAME: "team-a-pg"},
            {"placement_group_name": "team-a-pg"},
            id="group-name",
        ),
        pytest.param({k.EFA: "true"}, {"efa": "max"}, id="efa-true"),
        pytest.param({k.EFA: "2"}, {"efa": 2}, id="efa-count"),
        pytest.param({k.EFA: " 32 "}, {"efa": 32}, id="efa-trimmed-at-limit"),
        pytest.param({k.MAX_SPREAD: "1"}, {"max_spread": 1}, id="max-spread"),
        pytest.param(FLEET, {"placement": "cluster"}, id="fleet-one-zone"),
        pytest.param(
            {**FLEET, k.AVAILABILITY_ZONES: None, k.SUBNETS: "subnet-0123456789abcdef0"},
            {"placement": "cluster"},
            id="fleet-one-subnet",
        ),
        pytest.param(
            {k.PLACEMENT: "cluster", k.AVAILABILITY_ZONES: "us-east-1a,us-east-1b"},
            {"placement": "cluster"},
            id="runinstances-tries-zones-one-by-one",
        ),
        pytest.param(
            {},
            {"placement": None, "placement_group_name": None, "efa": None, "max_spread": None},
            id="none",
        ),
    ],
)
def test_network_annotations_resolve(
    annotations: dict[str, str | None], want: dict[str, Any]
) -> None:
    spec = validate_job(gang_job(annotations=annotations), S)
    assert {name: getattr(spec, name) for name in want} == want


def _violations(annotations: dict[str, str | None]) -> list[tuple[str, str, str | None]]:
    with pytest.raises(GangValidationError) as err:
        validate_job(gang_job(annotations=annotations), S)
    return [(v.key, v.reason, v.value) for v in err.value.violations]


@pytest.mark.parametrize(
    ("annotations", "violation"),
    [
        pytest.param(
            {k.PLACEMENT: "spread"}, (k.PLACEMENT, "InvalidPlacement", "spread"), id="strategy"
        ),
        pytest.param(
            {k.PLACEMENT: "cluster", k.PLACEMENT_GROUP_NAME: "pg"},
            (k.PLACEMENT_GROUP_NAME, "PlacementExclusive", "pg"),
            id="exclusive",
        ),
        pytest.param(
            {k.PLACEMENT_GROUP_NAME: "has space"},
            (k.PLACEMENT_GROUP_NAME, "InvalidPlacementGroupName", "has space"),
            id="group-name-space",
        ),
        pytest.param(
            {k.PLACEMENT_GROUP_NAME: "g" * 256},
            (k.PLACEMENT_GROUP_NAME, "InvalidPlacementGroupName", "g" * 127 + "\u2026"),
            id="group-name-256",
        ),
        pytest.param({k.EFA: "false"}, (k.EFA, "InvalidEfa", "false"), id="efa-false"),
        pytest.param({k.EFA: "0"}, (k.EFA, "InvalidEfa", "0"), id="efa-zero"),
        pytest.param({k.EFA: "33"}, (k.EFA, "InvalidEfa", "33"), id="efa-over-32"),
        pytest.param({k.MAX_SPREAD: "0"}, (k.MAX_SPREAD, "InvalidMaxSpread", "0"), id="spread-0"),
        pytest.param(
            {k.MAX_SPREAD: "one"}, (k.MAX_SPREAD, "InvalidMaxSpread", "one"), id="spread-word"
        ),
        pytest.param(
            {**FLEET, k.AVAILABILITY_ZONES: "us-east-1a,us-east-1b"},
            (k.PLACEMENT, "PlacementNeedsOneZone", "cluster"),
            id="fleet-two-zones",
        ),
        pytest.param(
            {**FLEET, k.AVAILABILITY_ZONES: None},
            (k.PLACEMENT, "PlacementNeedsOneZone", "cluster"),
            id="fleet-discovered-zones",
        ),
    ],
)
def test_network_violations_name_key_value_and_rule(
    annotations: dict[str, str | None], violation: tuple[str, str, str | None]
) -> None:
    assert _violations(annotations) == [violation]


def test_every_network_violation_at_once() -> None:
    found = _violations(
        {**FLEET, k.AVAILABILITY_ZONES: None, k.PLACEMENT_GROUP_NAME: "pg", k.EFA: "x"}
    )
    assert sorted(reason for _, reason, _ in found) == [
        "InvalidEfa",
        "PlacementExclusive",
        "PlacementNeedsOneZone",
    ]


def test_messages_say_the_rule_and_what_to_do() -> None:
    with pytest.raises(GangValidationError) as err:
        validate_job(gang_job(annotations={**FLEET, k.AVAILABILITY_ZONES: None}), S)
    text = str(err.value)
    assert "exactly one zone" in text
    assert "one availability zone" in text
    assert "mode: runinstances" in text


def test_no_placement_group_may_be_named_unless_the_admin_lists_it() -> None:
    job = gang_job(annotations={k.PLACEMENT_GROUP_NAME: "team-a-pg"})
    with pytest.raises(GangValidationError) as err:
        validate_job(job, settings())  # allowedPlacementGroups: [] (the default)
    ((key, reason, value),) = [(v.key, v.reason, v.value) for v in err.value.violations]
    assert (key, reason, value) == (k.PLACEMENT_GROUP_NAME, "PlacementGroupNotAllowed", "team-a-pg")
    assert "allowedPlacementGroups lists none" in str(err.value)


def test_a_group_the_provisioner_manages_is_never_named_even_where_any_is_listed() -> None:
    theirs = "atomic-gang-my-eks-cluster-team-a.pretrain-0a1b2c3d"
    with pytest.raises(GangValidationError) as err:
        validate_job(
            gang_job(annotations={k.PLACEMENT_GROUP_NAME: theirs}),
            settings(allowedPlacementGroups=["*"]),
        )
    (v,) = err.value.violations
    assert v.reason == "PlacementGroupNotAllowed"
    assert "manages for a pool" in v.message
