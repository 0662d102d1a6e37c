"""The layer as a separate moto server: a controller in another process sees it
over HTTP, including a response lost after the side effect (dropped connection)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError

from atomic_gang import GangSpec, GoDuration
from atomic_gang_fakeaws import ControlClient
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, Shortfall
from atomic_gang_provisioner.cloud.aws import Ec2Provider, EngineConfig, make_clients
from tests.integration.cloud.conftest import REGION, TYPE
from tests.support.clock import ManualClock
from tests.support.fakeaws_server import fakeaws_server
from tests.support.wait import wait_for


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with fakeaws_server(tmp_path_factory.mktemp("fakeaws"), region=REGION, cluster="demo") as up:
        yield up


def provider_for(endpoint: str, clock: ManualClock) -> Ec2Provider:
    session = boto3.session.Session(
        aws_access_key_id="x",
        aws_secret_access_key="x",
        region_name=REGION,
    )
    return Ec2Provider(
        clients=make_clients(region=REGION, endpoint_url=endpoint, session=session),
        config=EngineConfig(cluster="demo"),
        sleeper=clock.sleep,
        wall=clock.now,
        monotonic=clock.monotonic,
    )


def spec(world: dict[str, Any], pool: str, count: int) -> GangSpec:
    return GangSpec(
        pool=pool,
        count=count,
        instance_type=TYPE,
        mode="runinstances",
        region=REGION,
        node_role_arn=world["node_role_arn"],
        keep_warm_ttl=GoDuration.of(minutes=10),
        max_lifetime=GoDuration.of(hours=4),
        ami_variant="nvidia",
    )


def test_dropped_connection_after_launch_is_adopted_over_http(server: dict[str, Any]) -> None:
    control = ControlClient(server["endpoint"])
    control.clear_calls()
    control.add_rule({"action": "RunInstances", "effect": "lost_response"})
    engine = provider_for(server["endpoint"], ManualClock())
    result = engine.acquire(AcquireRequest(spec=spec(server["world"], "remote", 2), generation=0))
    assert isinstance(result, Launched)
    runs = control.calls("RunInstances")
    assert [c["outcome"] for c in runs] == ["lost", "ok"]
    assert {c["params"]["ClientToken"] for c in runs} == {"ag-remote-g0-us-east-1a"}
    owned = [i for i in engine.list_owned() if i.pool == "remote"]
    assert sorted(i.instance_id for i in owned) == sorted(result.instance_ids)
    control.close()


def test_capacity_set_over_the_control_api(server: dict[str, Any]) -> None:
    control = ControlClient(server["endpoint"])
    for zone in ("a", "b", "c"):
        control.set_capacity(REGION + zone, TYPE, 1)
    engine = provider_for(server["endpoint"], ManualClock())
    result = engine.acquire(AcquireRequest(spec=spec(server["world"], "big", 2), generation=0))
    assert isinstance(result, Shortfall)
    assert [a.code for a in result.attempts] == ["InsufficientInstanceCapacity"] * 3
    control.close()


def ec2_client(endpoint: str) -> Any:
    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def test_unimplemented_calls_say_so_instead_of_a_retried_500(server: dict[str, Any]) -> None:
    control = ControlClient(server["endpoint"])
    control.clear_calls()
    ec2 = ec2_client(server["endpoint"])
    with pytest.raises(ClientError) as err:
        ec2.create_instance_event_window(Name="maintenance")  # neither moto nor the layer has it
    assert err.value.response["Error"]["Code"] == "NotImplemented"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert len(control.calls("CreateInstanceEventWindow")) == 1
    control.close()


def test_network_knobs_over_the_control_api(server: dict[str, Any]) -> None:
    control = ControlClient(server["endpoint"])
    ec2 = ec2_client(server["endpoint"])
    ec2.create_placement_group(GroupName="knobs", Strategy="cluster")
    control.set_placement_capacity("p5.48xlarge", 1, group="knobs")
    control.set_topology_node_size(1, group="knobs")
    control.set_placement_delete_lag(0)
    subnet = server["world"]["subnets"][REGION + "a"]
    launch = {"ImageId": "ami-12345678", "InstanceType": "p5.48xlarge", "SubnetId": subnet}
    with pytest.raises(ClientError) as err:
        ec2.run_instances(MinCount=2, MaxCount=2, Placement={"GroupName": "knobs"}, **launch)
    assert err.value.response["Error"]["Code"] == "InsufficientInstanceCapacity"
    control.set_placement_capacity("p5.48xlarge", None, group="knobs")
    ran = ec2.run_instances(MinCount=2, MaxCount=2, Placement={"GroupName": "knobs"}, **launch)
    ids = [i["InstanceId"] for i in ran["Instances"]]
    nodes = ec2.describe_instance_topology(InstanceIds=ids)["Instances"]
    assert len({n["NetworkNodes"][-1] for n in nodes}) == 2  # one per node: spread over two
    sg = ec2.describe_security_groups(
        Filters=[{"Name": "group-name", "Values": ["eks-cluster-sg-*"]}]
    )
    group_id = sg["SecurityGroups"][0]["GroupId"]
    control.set_self_rule(group_id, allowed=False, region=REGION)
    rules = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]["IpPermissions"]
    assert not any(p["GroupId"] == group_id for r in rules for p in r["UserIdGroupPairs"])
    control.set_self_rule(group_id, allowed=True, region=REGION)
    with pytest.raises(httpx.HTTPStatusError):
        control._send("PUT", "/topology", {"nodeSize": 2})  # neither groupName nor default
    ec2.terminate_instances(InstanceIds=ids)
    control.close()


def _ec2(endpoint: str) -> Any:
    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def test_a_block_on_real_time_ends_by_itself(server: dict[str, Any]) -> None:
    """The control API body of issue 17; the server's ticker ends the block unasked."""
    control = ControlClient(server["endpoint"])
    now = datetime.now(UTC)
    control.add_reservation(
        "cr-0000000000000rt1",
        zone=REGION + "a",
        instance_type=TYPE,
        count=2,
        kind="capacity-block",
        start_date=now - timedelta(minutes=1),
        end_date=now + timedelta(minutes=30, seconds=3),  # EC2 ends it at now + 3 s
    )
    ec2 = _ec2(server["endpoint"])
    ids = [
        i["InstanceId"]
        for i in ec2.run_instances(
            ImageId="ami-12345678",
            InstanceType=TYPE,
            MinCount=2,
            MaxCount=2,
            SubnetId=server["world"]["subnets"][REGION + "a"],
            InstanceMarketOptions={"MarketType": "capacity-block"},
            CapacityReservationSpecification={
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": "cr-0000000000000rt1"},
            },
        )["Instances"]
    ]
    (record,) = wait_for(control.block_terminations, timeout=15, what="EC2's end of the block")
    assert sorted(record["instanceIds"]) == sorted(ids)
    described = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    assert {i["State"]["Name"] for r in described for i in r["Instances"]} == {"terminated"}
    control.close()


def test_a_bad_reservation_body_is_a_400_naming_the_field(server: dict[str, Any]) -> None:
    resp = httpx.post(
        server["endpoint"] + "/_fake/reservations",
        json={
            "reservationId": "cr-1",
            "zone": "us-east-1a",
            "instanceType": TYPE,
            "count": 1,
            "startDate": "tomorrow",
        },
    )
    assert resp.status_code == 400
    assert "startDate" in resp.json()["error"]
