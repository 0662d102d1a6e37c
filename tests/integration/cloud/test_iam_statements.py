"""Each statement of docs/iam/controller-policy.json, held to what it is for, moto IAM on.

Removed, a statement denies the very call the engine makes it for (one row per Sid);
the calls it must never allow (another cluster's placement group or ENI, an untagged
ENI, a SecureString) are denied by the whole policy. Launches are authorised resource
by resource, as EC2 does: without one resource type's statement every launch is denied.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from atomic_gang import GangSpec, keys
from atomic_gang_fakeaws import FakeAws
from atomic_gang_fakeaws.iam_denial import decoded
from atomic_gang_fakeaws.world import World
from atomic_gang_provisioner.cloud import AcquireRequest, ReleaseRequest, naming
from atomic_gang_provisioner.cloud.aws import Ec2Provider
from atomic_gang_provisioner.cloud.error_codes import CloudError
from tests.integration.cloud.conftest import CLUSTER, REGION, TYPE, live
from tests.integration.cloud.test_iam_policy import (
    DENIED,
    OURS,
    POLICY,
    Controller,
    Keyed,
    cni_tags,
    denied_calls,
    enforced,
    make_controller,
)

__all__ = ["make_controller"]  # a fixture, shared with test_iam_policy
Spec = Callable[..., GangSpec]
STATEMENTS: list[dict[str, Any]] = json.loads(POLICY.read_text())["Statement"]
LISTED_GROUP = "my-training-group"  # the policy's example of a group in allowedPlacementGroups
RESERVATION = "cr-0123456789abcdef0"
LAUNCHES = frozenset({"ec2:RunInstances", "ec2:CreateFleet"})


@dataclass
class Scene:
    engine: Ec2Provider
    keyed: Keyed
    make_spec: Spec
    world: World
    admin: dict[str, Any]
    fake: FakeAws


def tag_specs(kind: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


Act = Callable[[], object]  # the engine's calls, run under enforcement
Scenario = Callable[["Scene"], Act]  # sets the scene up (as the admin), returns the act


def acquire(scene: Scene, pool: str, **fields: Any) -> Act:
    spec = scene.make_spec(pool=pool, **fields)
    return lambda: scene.engine.acquire(AcquireRequest(spec=spec, generation=0))


def our_instance(scene: Scene) -> str:
    """One instance of ours, set up outside the policy (the admin's call)."""
    found = scene.admin["ec2"].run_instances(
        ImageId="ami-12345678", MinCount=1, MaxCount=1,
        SubnetId=scene.world.subnets["us-east-1a"], TagSpecifications=tag_specs("instance", OURS),
    )  # fmt: skip
    return str(found["Instances"][0]["InstanceId"])


def eni(scene: Scene, tags: dict[str, str]) -> str:
    """A detached ENI carrying ``tags``, set up outside the policy."""
    made = scene.admin["ec2"].create_network_interface(
        SubnetId=scene.world.subnets["us-east-1a"],
        TagSpecifications=tag_specs("network-interface", tags),
    )
    return str(made["NetworkInterface"]["NetworkInterfaceId"])


def launch(scene: Scene) -> Act:
    return acquire(scene, "s-launch", count=2)


def launch_reserved(scene: Scene) -> Act:
    scene.fake.add_reservation(RESERVATION, zone="us-east-1b", instance_type=TYPE, count=2)
    return acquire(scene, "s-reserved", count=2, capacity_reservation_id=RESERVATION)


def launch_placed(scene: Scene) -> Act:
    return acquire(scene, "s-placed", count=2, placement="cluster")


def launch_into_listed_group(scene: Scene) -> Act:
    scene.admin["ec2"].create_placement_group(GroupName=LISTED_GROUP, Strategy="cluster")
    return acquire(scene, "s-listed", count=2, placement_group_name=LISTED_GROUP)


def launch_fleet_and_forget(scene: Scene) -> Act:
    launch_it = acquire(scene, "s-fleet", mode="fleet")

    def act() -> None:
        launch_it()
        scene.engine.forget_pool("s-fleet")

    return act


def keep_warm(scene: Scene) -> Act:
    ids = [our_instance(scene)]
    return lambda: scene.engine.tag(ids, {keys.KEEP_WARM_UNTIL: "2030-01-01T00:00:00Z"})


def release(scene: Scene) -> Act:
    request = ReleaseRequest(instance_ids=(our_instance(scene),))
    return lambda: scene.engine.release(request)


def list_owned(scene: Scene) -> Act:
    return scene.engine.list_owned


def delete_our_eni(scene: Scene) -> Act:
    request = ReleaseRequest(instance_ids=(), enis=(eni(scene, OURS),))
    return lambda: scene.engine.release(request)


def delete_cni_eni(scene: Scene) -> Act:
    left = eni(scene, cni_tags("i-0123456789abcdef0"))
    request = ReleaseRequest(instance_ids=(), enis=(left,))
    return lambda: scene.engine.release(request)


def delete_group(scene: Scene) -> Act:
    name = naming.placement_group_name(cluster=CLUSTER, pool="s-gone")
    tags = naming.ownership_tags(cluster=CLUSTER, pool="s-gone")
    scene.admin["ec2"].create_placement_group(
        GroupName=name, Strategy="cluster", TagSpecifications=tag_specs("placement-group", tags)
    )
    return lambda: scene.engine.delete_placement_group("s-gone")


@dataclass(frozen=True)
class Need:
    """What a statement is for: ``scenario`` makes the call ``api`` it allows, and the
    denial without it names ``names`` (the IAM action or the resource refused)."""

    scenario: Scenario
    api: str
    names: str


GROUP, ENI, TEMPLATE = (
    ":placement-group/atomic-gang-",
    ":network-interface/eni-",
    ":launch-template/lt-",
)
NEEDS: dict[str, Need] = {
    "LaunchTaggedInstances": Need(launch, "RunInstances", ":instance/*"),
    "LaunchFromOurTemplates": Need(launch, "RunInstances", TEMPLATE),
    "LaunchWithImagesAndNetwork": Need(launch, "RunInstances", "::image/ami-"),
    "LaunchIntoReservations": Need(launch_reserved, "RunInstances", f"/{RESERVATION}"),
    "LaunchIntoOurPlacementGroups": Need(launch_placed, "RunInstances", GROUP),
    "LaunchIntoListedPlacementGroups": Need(
        launch_into_listed_group, "RunInstances", f":placement-group/{LISTED_GROUP}"
    ),
    "TagOnCreate": Need(launch, "CreateLaunchTemplate", "perform: ec2:CreateTags"),
    "TagOwnedInstances": Need(keep_warm, "CreateTags", ":instance/i-"),
    "ReleaseGang": Need(release, "TerminateInstances", ":instance/i-"),
    "DescribeForReconcile": Need(list_owned, "DescribeInstances", "perform: ec2:DescribeInstances"),
    "DetectCapacityBlocks": Need(
        launch_reserved, "DescribeCapacityReservations", "ec2:DescribeCapacityReservations"
    ),
    "DeleteOurInterfaces": Need(delete_our_eni, "DeleteNetworkInterface", ENI),
    "DeleteVpcCniInterfaces": Need(delete_cni_eni, "DeleteNetworkInterface", ENI),
    "CreateGangPlacementGroups": Need(launch_placed, "CreatePlacementGroup", GROUP),
    "DeleteGangPlacementGroups": Need(delete_group, "DeletePlacementGroup", GROUP),
    "CreateGangLaunchTemplates": Need(launch, "CreateLaunchTemplate", "ec2:CreateLaunchTemplate"),
    "ManageGangLaunchTemplates": Need(
        launch_fleet_and_forget, "CreateLaunchTemplateVersion", TEMPLATE
    ),
    "VerifyNodeInstanceProfile": Need(launch, "GetInstanceProfile", "iam:GetInstanceProfile"),
    "PassNodeRoleToEC2Only": Need(launch, "RunInstances", "perform: iam:PassRole"),
    "ResolveCluster": Need(launch, "DescribeCluster", "eks:DescribeCluster"),
    "ReadEksOptimizedAmiIds": Need(
        launch, "GetParameter", f"arn:aws:ssm:{REGION}::parameter/aws/service/eks/optimized-ami/"
    ),
}


def written(tmp_path: Path, statements: list[dict[str, Any]]) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": statements}))
    return path


def run(scene: Scene, scenario: Scenario) -> None:
    """The scenario's act under enforcement; what it was refused shows in the call log."""
    act = scenario(scene)

    def go() -> None:
        with contextlib.suppress(CloudError):
            act()

    enforced(go)


@pytest.fixture
def scene_for(
    make_controller: Controller,
    make_spec: Spec,
    world: World,
    admin: dict[str, Any],
    fake: FakeAws,
    tmp_path: Path,
) -> Callable[[list[dict[str, Any]]], Scene]:
    fake.set_throttling(False)  # several scenes' launches in one test: IAM is the subject here

    def build(statements: list[dict[str, Any]]) -> Scene:
        engine, keyed = make_controller(written(tmp_path, statements))
        return Scene(engine, keyed, make_spec, world, admin, fake)

    return build


def test_every_statement_has_a_need_and_a_sid() -> None:
    sids = [st.get("Sid") for st in STATEMENTS]
    assert all(sids)
    assert len(set(sids)) == len(sids)
    assert set(sids) == set(NEEDS)


def test_the_whole_policy_allows_every_need(
    scene_for: Callable[[list[dict[str, Any]]], Scene], fake: FakeAws
) -> None:
    scene = scene_for(STATEMENTS)
    for scenario in dict.fromkeys(need.scenario for need in NEEDS.values()):
        run(scene, scenario)
    assert denied_calls(fake) == []
    ok = {c["action"] for c in fake.calls() if c["outcome"] == "ok"}
    assert {need.api for need in NEEDS.values()} <= ok


@pytest.mark.parametrize("sid", list(NEEDS))
def test_without_the_statement_its_call_is_denied(
    sid: str, scene_for: Callable[[list[dict[str, Any]]], Scene], fake: FakeAws
) -> None:
    need = NEEDS[sid]
    scene = scene_for([st for st in STATEMENTS if st["Sid"] != sid])
    run(scene, need.scenario)
    refused = denied_calls(fake)
    assert refused, f"nothing was denied without {sid}"
    assert refused[0]["action"] == need.api, refused[0]
    assert need.names in refused[0]["message"], refused[0]["message"]


def without_launch_resource(kind: str) -> list[dict[str, Any]]:
    """The policy with ``kind``'s ARN taken out of every launch statement."""
    out = []
    for st in STATEMENTS:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        arns = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        kept = [a for a in arns if f":{kind}/" not in a] if LAUNCHES & set(actions) else arns
        if kept:
            out.append({**st, "Resource": kept})
    return out


def launch_everything(scene: Scene) -> Act:
    """One RunInstances touching every resource type (its template, image, subnet, security
    group, our placement group, a reservation), then one instant fleet."""
    scene.fake.add_reservation(RESERVATION, zone="us-east-1a", instance_type=TYPE, count=2)
    placed = acquire(
        scene, "s-all", count=2, placement="cluster", capacity_reservation_id=RESERVATION
    )
    fleet = acquire(scene, "s-fleet", mode="fleet", count=2)

    def act() -> None:
        placed()
        fleet()

    return act


def test_the_whole_policy_launches_with_every_resource_type(
    scene_for: Callable[[list[dict[str, Any]]], Scene], fake: FakeAws
) -> None:
    run(scene_for(STATEMENTS), launch_everything)
    assert denied_calls(fake) == []
    launched = [c for c in fake.calls() if c["action"] in ("RunInstances", "CreateFleet")]
    assert [(c["action"], c["outcome"]) for c in launched] == [
        ("RunInstances", "ok"),
        ("CreateFleet", "ok"),
    ]
    assert len(live()) == 4


@pytest.mark.parametrize(
    ("kind", "refused"),
    [
        ("instance", ["RunInstances", "CreateFleet"]),
        ("volume", ["RunInstances", "CreateFleet"]),
        ("network-interface", ["RunInstances", "CreateFleet"]),
        ("launch-template", ["RunInstances", "CreateFleet"]),
        ("image", ["RunInstances", "CreateFleet"]),
        ("subnet", ["RunInstances", "CreateFleet"]),
        ("security-group", ["RunInstances", "CreateFleet"]),
        ("placement-group", ["RunInstances"]),  # the fleet goes into no group
        ("capacity-reservation", ["RunInstances"]),  # nor into a reservation
        ("fleet", ["CreateFleet"]),
    ],
)
def test_a_launch_is_denied_when_one_resource_type_is_not_allowed(
    kind: str,
    refused: list[str],
    scene_for: Callable[[list[dict[str, Any]]], Scene],
    fake: FakeAws,
) -> None:
    run(scene_for(without_launch_resource(kind)), launch_everything)
    denied = [c for c in denied_calls(fake) if c["action"] in ("RunInstances", "CreateFleet")]
    assert [c["action"] for c in denied] == refused
    for call in denied:
        assert call["outcome"] == "error:UnauthorizedOperation"
        context = decoded(call["message"])["context"]
        assert f":{kind}/" in context["resource"]
        assert context["action"] == "ec2:" + call["action"]
    assert len(live()) == (2 if len(refused) == 1 else 0)


def test_a_request_tag_condition_on_every_resource_denies_every_launch(
    scene_for: Callable[[list[dict[str, Any]]], Scene], fake: FakeAws
) -> None:
    """A launch statement that looks right (the tags on whatever it launches) but covers
    the resources a launch only uses: those carry no request tags, so EC2 refuses."""
    launches = {st["Sid"] for st in STATEMENTS if LAUNCHES & set(st["Action"])}
    (tagged,) = [st for st in STATEMENTS if st["Sid"] == "LaunchTaggedInstances"]
    looks_right = {**tagged, "Sid": "LaunchGang", "Resource": "*"}
    run(scene_for([looks_right, *(st for st in STATEMENTS if st["Sid"] not in launches)]), launch)
    (refused,) = denied_calls(fake)
    assert refused["action"] == "RunInstances"
    context = decoded(refused["message"])["context"]
    assert ":launch-template/lt-" in context["resource"]
    assert not [c for c in context["conditions"]["items"] if c["key"].startswith("aws:Request")]
    assert live() == []


def refusal(probe: Callable[[], Any]) -> tuple[str, str]:
    with pytest.raises(ClientError) as err:
        probe()
    return str(err.value.response["Error"]["Code"]), str(err.value.response["Error"]["Message"])


def test_what_the_statements_must_never_allow_is_denied(
    scene_for: Callable[[list[dict[str, Any]]], Scene], admin: dict[str, Any], world: World
) -> None:
    """Loosening a statement (a condition dropped, a resource widened) lets one of these
    through; each is labelled with the statement that holds it back."""
    scene = scene_for(STATEMENTS)
    ec2, ssm = scene.keyed.client("ec2", region_name=REGION), scene.keyed.client("ssm")
    other = {keys.MANAGED: "true", keys.CLUSTER: "other-cluster"}
    for name, tags in (("atomic-gang-other-cluster-p-1", other), ("atomic-gang-untagged", {})):
        admin["ec2"].create_placement_group(
            GroupName=name, Strategy="cluster",
            **({"TagSpecifications": tag_specs("placement-group", tags)} if tags else {}),
        )  # fmt: skip
    theirs = admin["ec2"].create_launch_template(
        LaunchTemplateName="team-b-nodes", LaunchTemplateData={"ImageId": "ami-12345678"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    ours_lt = admin["ec2"].create_launch_template(
        LaunchTemplateName="atomic-gang-ours", LaunchTemplateData={"ImageId": "ami-12345678"},
        TagSpecifications=tag_specs("launch-template", OURS),
    )["LaunchTemplate"]["LaunchTemplateId"]  # fmt: skip
    unmanaged = admin["ec2"].run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1)
    unmanaged_id = unmanaged["Instances"][0]["InstanceId"]
    admin["ssm"].put_parameter(Name="/atomic-gang/db-password", Value="x", Type="SecureString")
    enis = {
        "untagged": eni(scene, {"team": "a"}),
        "cni-of-another-cluster": eni(scene, cni_tags("i-0123456789abcdef0", "other-cluster")),
        "ours-of-another-cluster": eni(scene, other),
    }
    whole = [*tag_specs("instance", OURS), *tag_specs("volume", OURS),
             *tag_specs("network-interface", OURS)]  # fmt: skip

    def run_instances(specs: list[dict[str, Any]] = whole, **extra: Any) -> Callable[[], Any]:
        return lambda: ec2.run_instances(
            ImageId="ami-12345678", MinCount=1, MaxCount=1, TagSpecifications=specs,
            SubnetId=world.subnets["us-east-1a"], **extra,
        )  # fmt: skip

    def delete(eni_id: str) -> Callable[[], Any]:
        return lambda: ec2.delete_network_interface(NetworkInterfaceId=eni_id)

    def probes() -> dict[tuple[str, str], tuple[str, str]]:
        run_instances()()  # the control: tagged, no template, no group: allowed
        cases: dict[tuple[str, str], Callable[[], Any]] = {
            ("LaunchIntoOurPlacementGroups", "into-another-clusters-group"): run_instances(
                Placement={"GroupName": "atomic-gang-other-cluster-p-1"}
            ),
            ("LaunchIntoOurPlacementGroups", "untagged-group-with-our-prefix"): run_instances(
                Placement={"GroupName": "atomic-gang-untagged"}
            ),
            ("LaunchFromOurTemplates", "someone-elses-template"): run_instances(
                LaunchTemplate={"LaunchTemplateId": theirs}
            ),
            ("LaunchTaggedInstances", "untagged-volume"): run_instances(
                [s for s in whole if s["ResourceType"] != "volume"]
            ),
            ("CreateGangPlacementGroups", "for-another-cluster"): lambda: (
                ec2.create_placement_group(
                    GroupName="atomic-gang-x",
                    Strategy="cluster",
                    TagSpecifications=tag_specs("placement-group", other),
                )
            ),
            ("DeleteGangPlacementGroups", "delete-another-clusters-group"): lambda: (
                ec2.delete_placement_group(GroupName="atomic-gang-other-cluster-p-1")
            ),
            ("TagOnCreate", "adopt-with-both-keys"): lambda: ec2.create_tags(
                Resources=[unmanaged_id],
                Tags=[{"Key": k, "Value": v} for k, v in OURS.items()],
            ),
            ("TagOwnedInstances", "tag-our-template-afterwards"): lambda: ec2.create_tags(
                Resources=[ours_lt], Tags=[{"Key": "note", "Value": "x"}]
            ),
            ("ReadEksOptimizedAmiIds", "a-securestring"): lambda: ssm.get_parameter(
                Name="/atomic-gang/db-password", WithDecryption=True
            ),
            ("ReadEksOptimizedAmiIds", "another-public-parameter"): lambda: ssm.get_parameter(
                Name="/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
            ),
        }
        for label, eni_id in enis.items():
            cases[("DeleteOurInterfaces/DeleteVpcCniInterfaces", f"eni-{label}")] = delete(eni_id)
        return {key: refusal(probe) for key, probe in cases.items()}

    found = enforced(probes)
    assert len(found) == 13
    for (sid, what), (code, _) in found.items():
        assert all(s in NEEDS for s in sid.split("/")), sid
        assert code in DENIED, (sid, what, code)
    refused = {
        what: decoded(msg)["context"]["resource"]
        for (_, what), (code, msg) in found.items()
        if code == "UnauthorizedOperation"
    }
    assert refused["into-another-clusters-group"].endswith(
        ":placement-group/atomic-gang-other-cluster-p-1"
    )
    assert refused["someone-elses-template"].endswith(f":launch-template/{theirs}")
    assert refused["untagged-volume"].endswith(":volume/*")
    assert found[("ReadEksOptimizedAmiIds", "a-securestring")][0] == "AccessDeniedException"
    assert len(live()) == 2  # the control and the unmanaged instance, nothing else
