"""Release: ENIs recorded, instances terminated, fleets deleted, ENIs deleted once detached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from atomic_gang import GangSpec, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, ReleaseRequest
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from tests.integration.cloud.conftest import CLUSTER, pool_instances
from tests.support.clock import ManualClock

Spec = Callable[..., GangSpec]


@pytest.fixture
def gang(provider: Ec2Provider, make_spec: Spec) -> Launched:
    result = provider.acquire(AcquireRequest(spec=make_spec(count=2), generation=0))
    assert isinstance(result, Launched)
    return result


def cni_tags(instance_id: str, cluster: str = CLUSTER) -> dict[str, str]:
    """The tags EKS's VPC CNI puts on each ENI it creates for a node."""
    return {
        "cluster.k8s.amazonaws.com/name": cluster,
        "node.k8s.amazonaws.com/instance_id": instance_id,
    }


def attach(
    admin: dict[str, Any],
    world: World,
    instance_id: str,
    *,
    cni: bool,
    delete_on_termination: bool,
    device: int = 1,
    tags: dict[str, str] | None = None,
) -> str:
    """An ENI attached to the instance: the VPC CNI's (its description and tags), or
    someone else's (untagged unless ``tags``)."""
    ec2 = admin["ec2"]
    description = f"aws-K8S-{instance_id}" if cni else "someone else's"
    tags = cni_tags(instance_id) if cni and tags is None else tags or {}
    specs = [
        {
            "ResourceType": "network-interface",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        }
    ]
    eni = ec2.create_network_interface(
        SubnetId=world.subnets["us-east-1a"],
        Description=description,
        **({"TagSpecifications": specs} if tags else {}),
    )
    eni_id: str = eni["NetworkInterface"]["NetworkInterfaceId"]
    attachment = ec2.attach_network_interface(
        NetworkInterfaceId=eni_id, InstanceId=instance_id, DeviceIndex=device
    )["AttachmentId"]
    if delete_on_termination:
        ec2.modify_network_interface_attribute(
            NetworkInterfaceId=eni_id,
            Attachment={"AttachmentId": attachment, "DeleteOnTermination": True},
        )
    return eni_id


def eni_state(admin: dict[str, Any], eni_id: str) -> str | None:
    found = admin["ec2"].describe_network_interfaces(
        Filters=[{"Name": "network-interface-id", "Values": [eni_id]}]
    )["NetworkInterfaces"]
    return str(found[0]["Status"]) if found else None


def test_release_deletes_only_the_enis_the_policy_lets_it_and_leaves_dot_to_ec2(
    provider: Ec2Provider, gang: Launched, admin: dict[str, Any], world: World
) -> None:
    """The VPC CNI's ENIs for this cluster and ENIs carrying our tags are deleted once
    detached; a stranger's (untagged, or the CNI's of another cluster) stays, as the
    controller policy could not delete it anyway; one with DeleteOnTermination is EC2's."""
    first, second = gang.instance_ids
    ours = {keys.MANAGED: "true", keys.CLUSTER: CLUSTER}
    cni = attach(admin, world, first, cni=True, delete_on_termination=False)
    tagged = attach(
        admin, world, first, cni=False, delete_on_termination=False, device=2, tags=ours
    )
    plain = attach(admin, world, second, cni=False, delete_on_termination=False)
    other = cni_tags(second, cluster="other-cluster")
    theirs = attach(
        admin, world, second, cni=True, delete_on_termination=False, device=3, tags=other
    )
    dot = attach(admin, world, second, cni=False, delete_on_termination=True, device=2)
    result = provider.release(ReleaseRequest(instance_ids=gang.instance_ids))
    assert result.done
    assert sorted(result.terminated) == sorted(gang.instance_ids)
    assert sorted(result.deleted_enis) == sorted([cni, tagged])
    assert eni_state(admin, cni) is None
    assert eni_state(admin, tagged) is None
    assert eni_state(admin, plain) == "available"
    assert eni_state(admin, theirs) == "available"
    assert eni_state(admin, dot) is None  # EC2 deleted it with the instance
    assert pool_instances("train") == []


def test_release_waits_for_detachment_on_the_injected_clock(
    provider: Ec2Provider,
    gang: Launched,
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
    clock: ManualClock,
) -> None:
    cni = attach(admin, world, gang.instance_ids[0], cni=True, delete_on_termination=False)
    fake.set_eni_detach_polls(3)
    result = provider.release(ReleaseRequest(instance_ids=gang.instance_ids))
    assert result.done
    assert result.deleted_enis == (cni,)
    assert clock.slept
    assert all(s == 2.0 for s in clock.slept)
    deletes = fake.calls("DeleteNetworkInterface")
    assert [c["outcome"] for c in deletes] == ["ok"]  # never tried while still attached


def test_slow_detachment_comes_back_pending_and_finishes_next_time(
    make_provider: Callable[..., Ec2Provider],
    gang: Launched,
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
) -> None:
    cni = attach(admin, world, gang.instance_ids[0], cni=True, delete_on_termination=False)
    fake.set_eni_detach_polls(6)
    impatient = make_provider(eni_wait_seconds=2.0)
    first = impatient.release(ReleaseRequest(instance_ids=gang.instance_ids))
    assert not first.done
    assert first.pending_enis == (cni,)
    assert eni_state(admin, cni) == "in-use"
    second = make_provider().release(
        ReleaseRequest(instance_ids=gang.instance_ids, enis=first.pending_enis)
    )
    assert second.done
    assert second.deleted_enis == (cni,)
    assert eni_state(admin, cni) is None


def test_retry_after_a_crash_recovers_cni_enis_by_description(
    provider: Ec2Provider, gang: Launched, admin: dict[str, Any], world: World
) -> None:
    cni = attach(admin, world, gang.instance_ids[0], cni=True, delete_on_termination=False)
    # The release crashed after terminating, before it recorded or deleted the ENIs.
    admin["ec2"].terminate_instances(InstanceIds=list(gang.instance_ids))
    assert eni_state(admin, cni) == "available"
    result = provider.release(ReleaseRequest(instance_ids=gang.instance_ids))
    assert result.done
    assert result.deleted_enis == (cni,)


def test_releasing_twice_is_harmless_and_foreign_enis_survive(
    provider: Ec2Provider, gang: Launched, admin: dict[str, Any], world: World, fake: FakeAws
) -> None:
    ec2 = admin["ec2"]
    other = ec2.run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1)
    other_id = other["Instances"][0]["InstanceId"]
    foreign = attach(admin, world, other_id, cni=True, delete_on_termination=False)
    request = ReleaseRequest(instance_ids=gang.instance_ids)
    assert provider.release(request).done
    again = provider.release(request)
    assert again.done
    assert again.deleted_enis == ()
    assert eni_state(admin, foreign) == "in-use"
    assert len(fake.calls("DeleteNetworkInterface")) == 0


def test_fleet_release_deletes_the_fleet(
    provider: Ec2Provider, make_spec: Spec, fake: FakeAws
) -> None:
    result = provider.acquire(AcquireRequest(spec=make_spec(mode="fleet", count=2), generation=0))
    assert isinstance(result, Launched)
    assert result.fleet_id
    done = provider.release(
        ReleaseRequest(instance_ids=result.instance_ids, fleet_ids=(result.fleet_id,))
    )
    assert done.done
    (deleted,) = fake.calls("DeleteFleets")
    assert deleted["params"]["FleetId.1"] == result.fleet_id
    assert pool_instances("train") == []


def test_a_new_leader_recovers_enis_left_pending_from_ec2_alone(
    make_provider: Callable[..., Ec2Provider],
    gang: Launched,
    admin: dict[str, Any],
    world: World,
    fake: FakeAws,
) -> None:
    """The old leader's release ran out of time with a CNI ENI still attached and the
    process went away with its pending list. A fresh provider finds that ENI again by
    the terminated instance's id, finds a detached ENI carrying our tags, leaves a
    stranger's detached ENI alone, and the release deletes what it found."""
    cni = attach(admin, world, gang.instance_ids[0], cni=True, delete_on_termination=False)
    fake.set_eni_detach_polls(6)
    first = make_provider(eni_wait_seconds=2.0).release(
        ReleaseRequest(instance_ids=gang.instance_ids)
    )
    assert first.pending_enis == (cni,)
    ec2 = admin["ec2"]
    ours = ec2.create_network_interface(
        SubnetId=world.subnets["us-east-1a"],
        TagSpecifications=[
            {
                "ResourceType": "network-interface",
                "Tags": [
                    {"Key": keys.MANAGED, "Value": "true"},
                    {"Key": keys.CLUSTER, "Value": CLUSTER},
                ],
            }
        ],
    )["NetworkInterface"]["NetworkInterfaceId"]
    stranger = ec2.create_network_interface(SubnetId=world.subnets["us-east-1a"])[
        "NetworkInterface"
    ]["NetworkInterfaceId"]

    recovered = make_provider().recover_enis()
    assert sorted(recovered) == sorted([cni, ours])
    result = make_provider().release(ReleaseRequest(instance_ids=(), enis=recovered))
    assert result.done
    assert sorted(result.deleted_enis) == sorted([cni, ours])
    assert eni_state(admin, cni) is None
    assert eni_state(admin, ours) is None
    assert eni_state(admin, stranger) == "available"
