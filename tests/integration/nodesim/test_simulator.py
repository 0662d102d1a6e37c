"""The simulator against in-process moto + our layer and the real EC2 engine: gangs our
engine launches (both modes) join with the right Node; terminations delete Nodes; the
knobs work; its calls carry their own access key and skip the account's throttling."""

from __future__ import annotations

import base64
from typing import Any

import boto3
import pytest
import yaml

from atomic_gang import GangSpec, GoDuration, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.world import World
from atomic_gang_nodesim.control import Controls
from atomic_gang_nodesim.knobs import BootDelay, DevicePlugins, DropRule
from atomic_gang_provisioner.cloud.aws import Ec2Provider, EngineConfig, make_clients
from atomic_gang_provisioner.cloud.userdata import ClusterJoin, user_data
from atomic_gang_provisioner.cloud.values import AcquireRequest, Launched
from tests.integration.nodesim.conftest import (
    BOTOCORE,
    CLUSTER,
    REGION,
    FakeKube,
    client,
    simulator,
)
from tests.support.clock import ManualClock


def _launch(
    world: World, pool: str, *, mode: str = "runinstances", count: int = 3, **more: Any
) -> list[str]:
    spec = GangSpec(
        pool=pool,
        count=count,
        instance_type="p4d.24xlarge",
        mode=mode,
        region=REGION,
        node_role_arn=world.node_role_arn,
        keep_warm_ttl=GoDuration.of(minutes=1),
        max_lifetime=GoDuration.of(hours=1),
        ami_variant="nvidia",
        **more,
    )
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="x",
        region_name=REGION,
        botocore_session=BOTOCORE,
    )
    clients = make_clients(region=REGION, session=session)
    engine = Ec2Provider(clients=clients, config=EngineConfig(cluster=CLUSTER))
    result = engine.acquire(AcquireRequest(spec=spec, generation=1))
    assert isinstance(result, Launched)
    return sorted(i.instance_id for i in result.instances)


@pytest.mark.parametrize("mode", ["runinstances", "fleet"])
def test_our_gangs_join_after_the_boot_delay(world: World, mode: str) -> None:
    ids = _launch(world, "train", mode=mode)
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=5))
    sim.tick()
    assert kube.nodes == {}  # still booting
    clock.advance(5)
    sim.tick()
    nodes = list(kube.nodes.values())
    assert sorted(n["spec"]["providerID"].rsplit("/", 1)[1] for n in nodes) == ids
    for node in nodes:
        assert node["metadata"]["name"].endswith(".ec2.internal")
        assert node["metadata"]["labels"][keys.POOL] == "train"
        assert node["metadata"]["labels"][keys.GROUP] == "train-g1"
        assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
        assert node["spec"]["taints"] == [
            {"key": keys.GANG_TAINT, "value": "train", "effect": "NoExecute"}
        ]


def test_device_plugins_advertise_their_resources_after_the_delay(world: World) -> None:
    _launch(world, "train")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=0), devices=DevicePlugins(seconds=4))
    sim.tick()
    registered = list(kube.nodes.values())
    assert len(registered) == 3
    for node in registered:
        assert "nvidia.com/gpu" not in node["status"]["allocatable"]
        assert node["status"]["allocatable"]["cpu"] == "96"
    clock.advance(3.9)
    sim.tick()
    assert "nvidia.com/gpu" not in next(iter(kube.nodes.values()))["status"]["allocatable"]
    clock.advance(0.1)
    sim.tick()
    for node in kube.nodes.values():
        assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_a_node_advertises_the_efa_interfaces_its_instance_has(world: World) -> None:
    _launch(world, "fabric", count=2, efa="max")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=0))
    sim.tick()
    assert [n["status"]["allocatable"]["vpc.amazonaws.com/efa"] for n in kube.nodes.values()] == [
        "4",
        "4",
    ]  # p4d.24xlarge: one EFA on each of its 4 network cards


def test_terminated_instances_lose_their_nodes(world: World) -> None:
    ids = _launch(world, "train")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=0))
    sim.tick()
    assert len(kube.nodes) == 3
    Controls(sim).terminate(ids[0])
    sim.tick()
    assert sorted(n["spec"]["providerID"].rsplit("/", 1)[1] for n in kube.nodes.values()) == ids[1:]


def test_dropped_join_and_not_ready(world: World) -> None:
    ids = _launch(world, "train")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=0), drops=[DropRule(nth=2)])
    sim.tick()
    assert len(kube.nodes) == 2
    state = Controls(sim).snapshot()["instances"]
    assert sorted(t["phase"] for t in state.values()) == ["dropped", "joined", "joined"]
    joined = next(i for i in ids if state[i]["phase"] == "joined")
    Controls(sim).not_ready(joined)
    sim.tick()
    node = kube.nodes[state[joined]["node"]]
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] != "fake"
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "False"
    Controls(sim).ready(joined)
    assert (
        kube.nodes[state[joined]["node"]]["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    )


def test_bad_user_data_never_joins(world: World) -> None:
    ec2 = client("ec2", "testing")
    pem = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n")
    join = ClusterJoin(
        name=CLUSTER,
        endpoint="https://0123.gr7.us-east-1.eks.amazonaws.com",
        certificate_authority=pem.decode(),
        service_cidr="172.20.0.0/16",
    )
    tags = [{"Key": keys.MANAGED, "Value": "true"}, {"Key": keys.CLUSTER, "Value": CLUSTER}]
    for data in (user_data(join=join, labels={}, pool="x"), "#!/bin/bash\necho hi\n"):
        ec2.run_instances(
            ImageId="ami-12345678",
            MinCount=1,
            MaxCount=1,
            SubnetId=world.subnets["us-east-1a"],
            UserData=data,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )
    kube = FakeKube()
    sim = simulator(kube, ManualClock(start=100.0), boot=BootDelay(seconds=0))
    sim.tick()
    assert kube.nodes == {}
    reasons = [t["reason"] for t in Controls(sim).snapshot()["instances"].values()]
    assert any("apiServerEndpoint" in r and "not the cluster's" in r for r in reasons)
    assert any("not a NodeConfig" in r for r in reasons)


def test_restart_adopts_nodes_and_the_call_log_names_the_caller(
    world: World, fake: FakeAws
) -> None:
    _launch(world, "train")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    simulator(kube, clock, boot=BootDelay(seconds=0)).tick()
    again = simulator(kube, clock)
    again.adopt()
    again.tick()
    assert len(kube.nodes) == 3
    assert {t.phase for t in again.tracked.values()} == {"joined"}
    sim_calls = [c for c in fake.calls() if c["caller"] == "nodesim"]
    # tick 1: one describe + 3 user data + 1 type + 1 EKS; tick 2: one describe
    assert [c["action"] for c in sim_calls].count("DescribeInstances") == 2
    assert [c["action"] for c in sim_calls].count("DescribeInstanceAttribute") == 3
    assert {c["caller"] for c in fake.calls("RunInstances")} == {"testing"}


def test_a_role_the_cluster_does_not_authorize_never_registers_until_it_is(
    world: World,
) -> None:
    ids = _launch(world, "train")
    eks = client("eks", "testing")
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(kube, clock, boot=BootDelay(seconds=0))
    sim.tick()
    assert kube.nodes == {}
    state = Controls(sim).snapshot()["instances"]
    assert sorted(state) == ids
    for tracked in state.values():
        assert tracked["phase"] == "booting"
        assert f"role {world.node_role_arn} is not a node of cluster {CLUSTER}" in tracked["reason"]
    eks.create_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn, type="EC2_LINUX")
    clock.advance(5)  # kubelet's next registration attempt
    sim.tick()
    assert len(kube.nodes) == 3


@pytest.mark.parametrize(
    ("groups", "joins"),
    [
        pytest.param(["system:bootstrappers", "system:nodes"], True, id="node-groups"),
        pytest.param(["system:masters"], False, id="other-groups"),
    ],
)
def test_an_aws_auth_mapping_lets_nodes_register(
    world: World, groups: list[str], joins: bool
) -> None:
    _launch(world, "train")
    eks = client("eks", "testing")
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=world.node_role_arn)
    kube, clock = FakeKube(), ManualClock(start=100.0)
    row = {"rolearn": world.node_role_arn, "username": "system:node:x", "groups": groups}
    kube.config_maps["aws-auth"] = {"data": {"mapRoles": yaml.safe_dump([row])}}
    simulator(kube, clock, boot=BootDelay(seconds=0)).tick()
    assert len(kube.nodes) == (3 if joins else 0)


def test_with_the_layers_control_api_a_tick_describes_only_new_instances(
    world: World, fake: FakeAws
) -> None:
    """Kubelets call no EC2 API: the simulator reads the instances' states from the fake
    layer and describes each instance once, so it does not load moto as gangs pile up."""
    ids = _launch(world, "train")
    kube, clock = FakeKube(), ManualClock(start=100.0)
    sim = simulator(
        kube,
        clock,
        states=lambda tags: fake.instance_states(tags=tags, region=REGION),
        boot=BootDelay(seconds=0),
    )
    sim.tick()
    assert sorted(n["spec"]["providerID"].rsplit("/", 1)[1] for n in kube.nodes.values()) == ids
    described = len(fake.calls("DescribeInstances"))
    sim.tick()
    assert len(fake.calls("DescribeInstances")) == described  # nothing new: no describe
    Controls(sim).terminate(ids[0])
    sim.tick()
    assert sorted(n["spec"]["providerID"].rsplit("/", 1)[1] for n in kube.nodes.values()) == ids[1:]
    assert len(fake.calls("DescribeInstances")) == described
