"""The engine with ``placement`` and ``efa``: the pool's own cluster placement group
(created once, adopted after a restart, refused when it is not ours, deleted once
empty), an existing group, the EFA launch layout in RunInstances and CreateFleet, and
the EFA prerequisites checked before anything is created or launched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from atomic_gang import GangSpec, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PermanentFailure,
    ReleaseRequest,
    RetryLater,
    Shortfall,
    Waiting,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from atomic_gang_provisioner.cloud.leaks import PoolView, orphaned_groups
from atomic_gang_provisioner.cloud.naming import placement_group_name
from tests.integration.cloud.conftest import (
    CLUSTER,
    REGION,
    TYPE,
    Factory,
    backend,
    live,
)
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]
P4D_CARDS = [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]


def acquire(engine: Ec2Provider, spec: GangSpec, generation: int = 0) -> Any:
    return engine.acquire(AcquireRequest(spec=spec, generation=generation))


def actions(fake: FakeAws) -> list[str]:
    return [c["action"] for c in fake.calls() if c["service"] == "ec2"]


def cards(instance: Any) -> list[tuple[int, int, str]]:
    return sorted(
        (getattr(n, "network_card_index", 0), n.device_index, n.interface_type)
        for n in instance.nics.values()
    )


def groups() -> dict[str, Any]:
    found: dict[str, Any] = getattr(backend(), "fake_placement_groups", {})
    return found


def test_one_run_instances_into_the_pools_group_with_four_efa_each(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    result = acquire(provider, make_spec(count=4, placement="cluster", efa="max"))
    assert isinstance(result, Launched), result
    name = placement_group_name(cluster=CLUSTER, pool="train")
    assert actions(fake).count("RunInstances") == 1
    assert actions(fake).count("CreatePlacementGroup") == 1
    assert {i.placement.group_name for i in live()} == {name}
    assert all(cards(i) == P4D_CARDS for i in live())
    assert groups()[name].tags == {
        keys.MANAGED: "true",
        keys.CLUSTER: CLUSTER,
        keys.POOL: "train",
    }
    assert groups()[name].strategy == "cluster"
    run = fake.calls("RunInstances")[0]["params"]
    assert "SubnetId" not in run  # it moved into the interfaces
    assert run["Placement.GroupName"] == name


def test_the_group_is_reused_across_generations_and_adopted_after_a_restart(
    make_provider: Factory, make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(count=2, placement="cluster")
    engine = make_provider()
    first = acquire(engine, spec)
    assert isinstance(first, Launched)
    engine.release(ReleaseRequest(instance_ids=first.instance_ids))
    fake.clear_calls()
    assert isinstance(acquire(engine, spec, generation=1), Launched)
    assert "CreatePlacementGroup" not in actions(fake)  # +0 on reuse
    fake.clear_calls()
    assert isinstance(acquire(make_provider(), spec, generation=2), Launched)  # a new leader
    created = fake.calls("CreatePlacementGroup")
    assert [c["outcome"] for c in created] == ["error:InvalidPlacementGroup.Duplicate"]
    assert actions(fake).count("DescribePlacementGroups") == 1
    assert len(groups()) == 1


def test_a_group_by_our_name_that_is_not_ours_is_refused(
    admin: dict[str, Any], provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    name = placement_group_name(cluster=CLUSTER, pool="train")
    admin["ec2"].create_placement_group(GroupName=name, Strategy="spread")
    result = acquire(provider, make_spec(placement="cluster"))
    assert isinstance(result, PermanentFailure)
    assert result.code == "PlacementGroupConflict"
    assert result.rejects
    assert "strategy 'spread'" in result.message
    assert f"tag {keys.POOL}=None" in result.message
    assert "RunInstances" not in actions(fake)


def test_a_group_that_cannot_hold_the_gang_is_a_shortfall_at_no_cost(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, clock: ManualClock
) -> None:
    fake.set_placement_capacity(TYPE, 3)
    spec = make_spec(count=4, placement="cluster", availability_zones=(REGION + "a",))
    short = acquire(provider, spec)
    assert isinstance(short, Shortfall)
    assert [a.code for a in short.attempts] == ["InsufficientInstanceCapacity"]
    assert live() == []
    fake.set_placement_capacity(TYPE, 4)
    assert isinstance(acquire(provider, spec, generation=1), Waiting)  # the cell's backoff
    clock.sleep(5)
    assert isinstance(acquire(provider, spec, generation=1), Launched)


def test_a_fleet_carries_the_group_in_its_override_and_efa_in_its_template(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(
        count=3, mode="fleet", placement="cluster", efa="max", availability_zones=(REGION + "b",)
    )
    result = acquire(provider, spec)
    assert isinstance(result, Launched), result
    name = placement_group_name(cluster=CLUSTER, pool="train")
    assert actions(fake).count("CreateFleet") == 1
    params = fake.calls("CreateFleet")[0]["params"]
    assert params["LaunchTemplateConfigs.1.Overrides.1.Placement.GroupName"] == name
    assert {(i.placement.group_name, i.availability_zone) for i in live()} == {(name, REGION + "b")}
    assert all(cards(i) == P4D_CARDS for i in live())


def test_an_existing_group_is_used_and_never_created_or_deleted(
    admin: dict[str, Any], provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    admin["ec2"].create_placement_group(GroupName="theirs", Strategy="cluster")
    fake.clear_calls()
    result = acquire(provider, make_spec(count=2, placement_group_name="theirs"))
    assert isinstance(result, Launched)
    assert {i.placement.group_name for i in live()} == {"theirs"}
    assert "CreatePlacementGroup" not in actions(fake)
    missing = acquire(provider, make_spec(pool="other", placement_group_name="nope"))
    assert isinstance(missing, PermanentFailure)
    assert (missing.code, missing.reason, missing.rejects) == (
        "InvalidPlacementGroup.Unknown",
        "PlacementGroupNotFound",
        True,
    )
    assert len(live()) == 2


def test_the_group_is_deleted_once_its_last_instance_is_gone(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    launched = acquire(provider, make_spec(count=2, placement="cluster"))
    assert isinstance(launched, Launched)
    assert provider.delete_placement_group("train") is False  # InUse: ask again later
    fake.set_placement_delete_lag(2)  # terminated members hold it for two more calls
    assert provider.release(ReleaseRequest(instance_ids=launched.instance_ids)).done
    assert [provider.delete_placement_group("train") for _ in range(3)] == [False, False, True]
    assert groups() == {}
    assert provider.delete_placement_group("train") is True  # gone already: done


def test_the_reaper_sees_this_clusters_groups_only(
    admin: dict[str, Any], provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    assert isinstance(acquire(provider, make_spec(count=1, placement="cluster")), Launched)
    admin["ec2"].create_placement_group(GroupName="theirs", Strategy="cluster")
    (found,) = provider.list_placement_groups()
    assert (found.pool, found.strategy) == ("train", "cluster")
    assert provider.reap_placement_group(found.name) is False  # an instance is still in it


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        pytest.param(
            {"instance_type": "m5.large", "ami_variant": "standard"},
            "m5.large does not support EFA",
            id="no-efa",
        ),
        pytest.param({"efa": 8}, "supports at most 4", id="too-many"),
    ],
)
def test_efa_the_type_cannot_have_is_rejected_before_anything_is_made(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, fields: dict[str, Any], says: str
) -> None:
    result = acquire(provider, make_spec(**{"placement": "cluster", "efa": "max", **fields}))
    assert isinstance(result, PermanentFailure)
    assert (result.code, result.reason, result.rejects) == (
        "EfaNotSupported",
        "EfaNotSupported",
        True,
    )
    assert says in result.message
    made = {"RunInstances", "CreateLaunchTemplate", "CreatePlacementGroup"}
    assert made.isdisjoint(actions(fake))


def test_a_security_group_without_the_self_rule_is_rejected_with_the_rule_to_add(
    admin: dict[str, Any], make_provider: Factory, make_spec: Spec, fake: FakeAws
) -> None:
    sg = admin["eks"].describe_cluster(name=CLUSTER)["cluster"]["resourcesVpcConfig"][
        "clusterSecurityGroupId"
    ]
    fake.set_self_rule(sg, allowed=False, region=REGION)
    engine = make_provider()
    result = acquire(engine, make_spec(efa="max"))
    assert isinstance(result, PermanentFailure)
    assert (result.code, result.rejects) == ("EfaSecurityGroup", True)
    assert f"authorize-security-group-ingress --group-id {sg} --protocol -1" in result.message
    assert "authorize-security-group-egress" in result.message
    assert {"RunInstances", "CreateLaunchTemplate"}.isdisjoint(actions(fake))
    fake.set_self_rule(sg, allowed=True, region=REGION)  # fixed: seen at the next attempt
    assert isinstance(acquire(engine, make_spec(efa="max"), generation=1), Launched)


def test_a_group_deleted_between_create_and_launch_is_made_again(
    admin: dict[str, Any], provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(count=2, placement="cluster")
    first = acquire(provider, spec)
    assert isinstance(first, Launched)
    assert provider.release(ReleaseRequest(instance_ids=first.instance_ids)).done
    (group,) = provider.list_placement_groups()
    assert orphaned_groups([group], pools={}) == (group,)  # its pool is gone, say
    assert orphaned_groups([group], pools={"train": PoolView()}) == ()
    assert provider.reap_placement_group(group.name) is True  # this engine knows
    second = acquire(provider, spec, generation=1)
    assert isinstance(second, Launched)
    assert provider.release(ReleaseRequest(instance_ids=second.instance_ids)).done
    admin["ec2"].delete_placement_group(GroupName=group.name)  # a former leader's reaper
    again = acquire(provider, spec, generation=2)  # this engine thinks it still exists
    assert isinstance(again, RetryLater)
    assert again.code == "InvalidPlacementGroup.Unknown"
    assert isinstance(acquire(provider, spec, generation=2), Launched)
    assert [g.name for g in provider.list_placement_groups()] == [group.name]


def test_a_cluster_group_busy_in_another_zone_is_a_shortfall(
    admin: dict[str, Any], world: Any, provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    admin["ec2"].create_placement_group(GroupName="theirs", Strategy="cluster")
    admin["ec2"].run_instances(  # someone else's instance holds the group in us-east-1a
        ImageId="ami-12345678",
        MinCount=1,
        MaxCount=1,
        SubnetId=world.subnets[REGION + "a"],
        Placement={"GroupName": "theirs"},
    )
    spec = make_spec(count=2, placement_group_name="theirs", availability_zones=(REGION + "b",))
    result = acquire(provider, spec)
    assert isinstance(result, Shortfall)
    assert [(a.zone, a.code) for a in result.attempts] == [
        (REGION + "b", "InvalidPlacementGroup.InUse")
    ]
    assert len(live()) == 1


def test_a_group_vanishing_while_it_is_adopted_is_tried_again(
    make_provider: Factory, make_spec: Spec, fake: FakeAws
) -> None:
    spec = make_spec(count=1, placement="cluster")
    assert isinstance(acquire(make_provider(), spec), Launched)
    fake.add_rule(
        {
            "action": "DescribePlacementGroups",
            "code": "InvalidPlacementGroup.Unknown",
            "status": 400,
        }
    )
    restarted = make_provider()
    gone = acquire(restarted, spec, generation=1)
    assert isinstance(gone, RetryLater)
    assert gone.code == "PlacementGroupGone"
    assert isinstance(acquire(restarted, spec, generation=1), Launched)
