"""The reaper primitive: one filtered, paginated listing; pure classify; terminate."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang import GangSpec, GoDuration, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_provisioner.cloud import (
    AcquireRequest,
    Launched,
    PoolView,
    ReleaseRequest,
    find_leaks,
    naming,
)
from atomic_gang_provisioner.cloud.aws import Ec2Provider, inventory
from tests.integration.cloud.conftest import CLUSTER, live, pool_instances
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]


def launch(provider: Ec2Provider, spec: GangSpec, generation: int = 0) -> Launched:
    result = provider.acquire(AcquireRequest(spec=spec, generation=generation))
    assert isinstance(result, Launched)
    return result


def test_listing_is_one_filtered_call_of_this_clusters_managed_instances(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws, admin: dict[str, Any]
) -> None:
    mine = launch(provider, make_spec(count=2))
    ec2 = admin["ec2"]
    ec2.run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1)  # not ours
    ec2.run_instances(
        ImageId="ami-12345678",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": keys.MANAGED, "Value": "true"},
                    {"Key": keys.CLUSTER, "Value": "another-cluster"},
                ],
            }
        ],
    )
    fake.clear_calls()
    owned = provider.list_owned()
    assert sorted(i.instance_id for i in owned) == sorted(mine.instance_ids)
    (call,) = fake.calls()
    assert call["action"] == "DescribeInstances"
    filters = {v for k, v in call["params"].items() if k.endswith(".Name")}
    assert {f"tag:{keys.MANAGED}", f"tag:{keys.CLUSTER}", "instance-state-name"} <= filters
    assert call["params"]["MaxResults"] == "1000"


def test_listing_follows_next_token(
    provider: Ec2Provider,
    make_spec: Spec,
    fake: FakeAws,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for i in range(5):
        clock.sleep(0.5)  # our launch budget: a burst of 4, then 2 a second
        launch(provider, make_spec(pool=f"p{i}", count=1))
    monkeypatch.setattr(inventory, "PAGE", 2)
    fake.clear_calls()
    assert len(provider.list_owned()) == 5
    assert len(fake.calls("DescribeInstances")) == 3


def test_sweep_terminates_orphans_and_expired_keep_warm_only(
    provider: Ec2Provider, make_spec: Spec, clock: ManualClock
) -> None:
    kept = launch(provider, make_spec(pool="kept", count=1))
    warm = launch(provider, make_spec(pool="warm", count=1))
    orphan = launch(provider, make_spec(pool="deleted", count=1))
    until = (clock.now() + timedelta(minutes=10)).isoformat()
    provider.tag(warm.instance_ids, {keys.KEEP_WARM_UNTIL: until})
    clock.sleep(11 * 60)
    pools = {
        "kept": PoolView(instance_ids=frozenset(kept.instance_ids)),
        "warm": PoolView(instance_ids=frozenset(warm.instance_ids)),
    }
    verdicts = find_leaks(
        provider.list_owned(),
        now=clock.now(),
        pools=pools,
        default_max_lifetime=GoDuration.of(hours=4),
    )
    reasons = {v.instance_id: v.reason for v in verdicts}
    assert reasons == {
        warm.instance_ids[0]: "keep-warm-expired",
        orphan.instance_ids[0]: "orphaned",
    }
    assert provider.release(ReleaseRequest(instance_ids=tuple(reasons))).done
    assert [i.id for i in live()] == list(kept.instance_ids)


def test_a_stray_of_any_generation_is_reaped_but_a_set_being_adopted_is_kept(
    provider: Ec2Provider, make_spec: Spec, clock: ManualClock, admin: dict[str, Any]
) -> None:
    """Issue 12 (5): a duplicate of the live pool's *current* generation that status never
    recorded (a crash at the wrong moment) is released after the grace period; the set
    of a pool still Acquiring at its generation (launch response lost) is adopted."""
    live_spec = make_spec(pool="live", count=2)
    recorded = launch(provider, live_spec, generation=5)
    tags = naming.group_tags(cluster=CLUSTER, spec=live_spec, generation=5)
    duplicate = admin["ec2"].run_instances(
        ImageId="ami-12345678",
        InstanceType=live_spec.instance_type,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )["Instances"][0]["InstanceId"]
    lost_spec = make_spec(pool="acquiring", count=2)
    lost = launch(provider, lost_spec, generation=9)  # EC2 launched; status never heard
    pools = {
        "live": PoolView(instance_ids=frozenset(recorded.instance_ids)),
        "acquiring": PoolView(adopting=9),
    }

    def verdicts() -> dict[str, str]:
        found = find_leaks(
            provider.list_owned(),
            now=clock.now(),
            pools=pools,
            default_max_lifetime=GoDuration.of(hours=4),
        )
        return {v.instance_id: v.reason for v in found}

    assert verdicts() == {}  # within the grace period: maybe a launch in flight
    clock.sleep(16 * 60)
    assert verdicts() == {duplicate: "stray"}
    assert provider.release(ReleaseRequest(instance_ids=(duplicate,))).done
    assert sorted(i.id for i in pool_instances("live")) == sorted(recorded.instance_ids)
    adopted = provider.acquire(AcquireRequest(spec=lost_spec, generation=9))
    assert isinstance(adopted, Launched)
    assert sorted(adopted.instance_ids) == sorted(lost.instance_ids)  # nothing relaunched
    assert len(pool_instances("acquiring")) == 2
