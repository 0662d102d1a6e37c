"""The pure network parts of the cloud layer: EFA count and layout, the self-rule
check, the placement group name, the topology limiter, spread and node labels."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud import naming, network_layers
from atomic_gang_provisioner.cloud.aws import efa
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.instance_types import TypeInfo
from atomic_gang_provisioner.cloud.aws.placement import PlacementGroups
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.aws.topology_reader import TokenBucket, TopologyReader
from atomic_gang_provisioner.cloud.batcher import Windows
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.cloud.retry import Backoff
from atomic_gang_provisioner.cloud.values import TopologyRead

P4D = TypeInfo(arch="x86_64", efa_supported=True, max_efa_interfaces=4, network_cards=4)
NAME = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)


def spec(**fields: Any) -> GangSpec:
    base: dict[str, Any] = {
        "pool": "p",
        "count": 2,
        "instance_type": "p4d.24xlarge",
        "mode": "runinstances",
        "region": "us-east-1",
        "node_role_arn": "arn:aws:iam::123456789012:role/r",
        "keep_warm_ttl": GoDuration.of(minutes=10),
        "max_lifetime": GoDuration.of(hours=4),
        "ami_variant": "nvidia",
    }
    return GangSpec(**{**base, **fields})


@pytest.mark.parametrize(
    ("efa_field", "info", "expected"),
    [
        pytest.param(None, P4D, 0, id="none"),
        pytest.param("max", P4D, 4, id="max"),
        pytest.param(2, P4D, 2, id="fewer"),
        pytest.param(4, P4D, 4, id="all"),
    ],
)
def test_interface_count(efa_field: Any, info: TypeInfo, expected: int) -> None:
    assert efa.interface_count(spec(efa=efa_field), info) == expected


@pytest.mark.parametrize(
    ("efa_field", "info", "says"),
    [
        pytest.param("max", TypeInfo(arch="x86_64"), "does not support EFA", id="unsupported"),
        pytest.param(5, P4D, "supports at most 4", id="too-many"),
    ],
)
def test_interface_count_refusals_name_the_type(efa_field: Any, info: TypeInfo, says: str) -> None:
    with pytest.raises(CloudError) as err:
        efa.interface_count(spec(efa=efa_field), info)
    assert err.value.code == "EfaNotSupported"
    assert says in err.value.message
    assert "p4d.24xlarge" in err.value.message


def test_layout_is_one_efa_per_card_primary_on_card_zero() -> None:
    nics = efa.interfaces(4, security_groups=["sg-1"], subnet_id="subnet-1")
    assert [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in nics] == [
        (0, 0, "efa"),
        (1, 1, "efa"),
        (2, 1, "efa"),
        (3, 1, "efa"),
    ]
    assert all(n["Groups"] == ["sg-1"] and n["SubnetId"] == "subnet-1" for n in nics)
    assert all(n["DeleteOnTermination"] for n in nics)
    assert "SubnetId" not in efa.interfaces(1, security_groups=[])[0]  # a template's


def rule(group: str, *, cidr: bool = False) -> dict[str, Any]:
    pairs = [] if cidr else [{"GroupId": group}]
    ranges = [{"CidrIp": "0.0.0.0/0"}] if cidr else []
    return {"IpProtocol": "-1", "UserIdGroupPairs": pairs, "IpRanges": ranges}


@pytest.mark.parametrize(
    ("ingress", "egress", "missing"),
    [
        pytest.param([rule("sg-1")], [rule("sg-1")], [], id="both"),
        pytest.param([rule("sg-1")], [rule("sg-1", cidr=True)], ["outbound"], id="egress-cidr"),
        pytest.param([], [rule("sg-1")], ["inbound"], id="no-ingress"),
        pytest.param([rule("sg-2")], [], ["inbound", "outbound"], id="other-group"),
        pytest.param(
            [{**rule("sg-1"), "IpProtocol": "tcp"}], [rule("sg-1")], ["inbound"], id="tcp-only"
        ),
    ],
)
def test_missing_self_rules(
    ingress: list[dict[str, Any]], egress: list[dict[str, Any]], missing: list[str]
) -> None:
    group = {"GroupId": "sg-1", "IpPermissions": ingress, "IpPermissionsEgress": egress}
    found = efa.missing_self_rules(group)
    assert [f.split(" ", 1)[0] for f in found] == missing
    assert all("sg-1" in f for f in found)


@given(cluster=NAME, pool=NAME)
def test_placement_group_name_is_stable_and_within_limits(cluster: str, pool: str) -> None:
    name = naming.placement_group_name(cluster=cluster, pool=pool)
    assert len(name) <= 255
    assert name.isascii()
    assert name == naming.placement_group_name(cluster=cluster, pool=pool)


def test_placement_group_names_keep_dashed_parts_apart() -> None:
    assert naming.placement_group_name(cluster="a-b", pool="c") != naming.placement_group_name(
        cluster="a", pool="b-c"
    )
    assert len(naming.placement_group_name(cluster="c" * 100, pool="p" * 253)) == 255


def test_token_bucket_says_how_long_to_wait() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=1.0, burst=1.0, monotonic=lambda: now[0])
    assert bucket.take() == 0.0
    assert bucket.take() == pytest.approx(1.0)
    now[0] = 0.25
    assert bucket.take() == pytest.approx(0.75)
    now[0] = 1.0
    assert bucket.take() == 0.0


def test_spread_counts_distinct_bottom_nodes() -> None:
    read = TopologyRead(
        nodes=(("i-1", ("a", "b", "x")), ("i-2", ("a", "b", "x")), ("i-3", ("a", "c", "y")))
    )
    assert read.spread == 2
    assert read.of("i-3") == ("a", "c", "y")
    assert read.of("i-9") == ()
    assert TopologyRead().spread == 0


def test_layer_labels_and_supported_types() -> None:
    assert network_layers.layer_labels(("n1", "n2", "n3")) == {
        "topology.k8s.aws/network-node-layer-1": "n1",
        "topology.k8s.aws/network-node-layer-2": "n2",
        "topology.k8s.aws/network-node-layer-3": "n3",
    }
    assert network_layers.supported("p4d.24xlarge")
    assert network_layers.supported("p6-b200.48xlarge")
    assert not network_layers.supported("p3.16xlarge")  # only p3dn
    assert not network_layers.supported("m5.large")


class Ec2:
    """Answers DescribeInstanceTopology with a node per id; counts its calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def describe_instance_topology(self, InstanceIds: list[str]) -> dict[str, Any]:
        self.calls.append(InstanceIds)
        rows = [{"InstanceId": i, "NetworkNodes": ["top", "mid", f"nn-{i}"]} for i in InstanceIds]
        return {"Instances": rows}


def test_reader_asks_at_most_100_ids_a_call_paced_below_ecs_one_a_second() -> None:
    """150 ids: 100 in the first call; the batch thread waits once for the next token
    (here the clock stands still, so the rest gets "later" with the time to wait)."""
    now, waited = [0.0], list[float]()
    ec2 = Ec2()
    caller = Caller(backoff=Backoff(rng=random.Random(1)), sleeper=waited.append)
    reader = TopologyReader(
        clients=AwsClients(ec2=ec2, eks=None, ssm=None, iam=None),
        caller=caller,
        monotonic=lambda: now[0],
    )
    ids = [f"i-{n:03}" for n in range(150)]
    first = reader.read_later(ids).result()
    assert [len(c) for c in ec2.calls] == [100]
    assert len(first.nodes) == 100
    assert waited == [pytest.approx(1 / 0.9)]  # a tenth slower than EC2's 1/s
    assert first.retry_after == pytest.approx(1 / 0.9)
    now[0] = 1.0
    assert reader.read_later(ids).result().retry_after == pytest.approx(0.1 / 0.9)
    now[0] = 1.2
    assert reader.read_later(ids).result().spread == 150
    assert [len(c) for c in ec2.calls] == [100, 50]


def reader_of(ec2: Ec2, now: list[float], windows: Windows | None = None) -> TopologyReader:
    return TopologyReader(
        clients=AwsClients(ec2=ec2, eks=None, ssm=None, iam=None),
        caller=Caller(backoff=Backoff(rng=random.Random(1)), sleeper=lambda s: None),
        monotonic=lambda: now[0],
        windows=windows,
    )


def test_gangs_asking_together_share_one_call_each_with_its_own_answer() -> None:
    """12 gangs of 8 cost one call, not twelve seconds of the 1/s budget."""
    ec2, now = Ec2(), [0.0]
    reader = reader_of(ec2, now, Windows(idle_seconds=0.2, max_seconds=2.0))
    gangs = [[f"i-{g:02}{n}" for n in range(8)] for g in range(12)]
    answers = [reader.read_later(ids) for ids in gangs]
    reads = [a.result(timeout=10) for a in answers]
    assert [len(c) for c in ec2.calls] == [96]
    for ids, read in zip(gangs, reads, strict=True):
        assert sorted(i for i, _ in read.nodes) == sorted(ids)  # its own, nobody else's
        assert (read.spread, read.retry_after) == (8, 0)


def test_a_gang_read_before_is_answered_at_once_without_a_batch() -> None:
    ec2, now = Ec2(), [0.0]
    reader = reader_of(ec2, now)
    ids = ["i-a", "i-b"]
    first = reader.read_later(ids).result(timeout=10)
    again = reader.read_later(ids)
    assert again.done()  # no batch window, no worker round trip
    assert again.result() == first
    assert len(ec2.calls) == 1


def test_a_reservation_inside_a_group_takes_the_gang_into_it() -> None:
    groups = PlacementGroups(
        clients=AwsClients(ec2=None, eks=None, ssm=None, iam=None),  # no call on this path
        caller=Caller(backoff=Backoff(), sleeper=lambda s: None),
        cluster="c",
    )
    arn = "arn:aws:ec2:us-east-1:123456789012:placement-group/reserved-here"
    held = Reservation(
        reservation_id="cr-1",
        instance_type="p4d.24xlarge",
        zone="us-east-1a",
        state="active",
        total=4,
        available=4,
        placement_group_arn=arn,
    )
    reserved = spec(capacity_reservation_id="cr-1", placement="cluster")
    assert groups.for_launch(reserved, held) == "reserved-here"  # not a group of our own
    named = spec(capacity_reservation_id="cr-1", placement_group_name="reserved-here")
    assert groups.for_launch(named, held) == "reserved-here"
    assert groups.for_launch(spec(placement_group_name="x")) == "x"
    assert groups.for_launch(spec()) is None
