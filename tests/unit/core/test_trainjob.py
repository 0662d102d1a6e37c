"""TrainJob rules: every Job rule on its metadata, gang-roles (default the trainer's
``node``, names checked for syntax only), count parity with numNodes, the runtime
patches' gang node claims (none on CREATE, only Kueue changes them on UPDATE), our keys
out of the patches' JobSet metadata, one pod per node; and the runtimes' templates,
which may claim no gang node at all."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import keys as k
from atomic_gang.errors import GangValidationError
from atomic_gang.gang_object import review, review_update
from atomic_gang.job import Findings
from atomic_gang.objects import MalformedJobError
from atomic_gang.trainjob import (
    TRAINER_ROLE,
    review_runtime,
    review_trainjob,
    review_trainjob_update,
    validate_trainjob,
)
from tests.support.jobs import (
    KUEUE_PATCH,
    PINNED_POD,
    TRAINER_CONTROLLER,
    gang_trainjob,
    runtime_patch,
    settings,
)

S = settings()
KUEUE = S.kueue_username
TENANT = "system:serviceaccount:team-a:trainer"
PATCHED = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"


def verdict(obj: dict[str, Any], **kw: Any) -> Findings:
    found = review_trainjob(obj, kw.pop("s", S), **kw)
    assert found is not None
    return found


def reasons(obj: dict[str, Any], **kw: Any) -> list[str]:
    return [v.reason for v in verdict(obj, **kw).violations]


def updated(old: dict[str, Any], new: dict[str, Any], user: str) -> list[str]:
    found = review_trainjob_update(old, new, S, user=user)
    return [] if found is None else [v.reason for v in found.violations]


def test_a_torch_trainjob_of_four_gpu_nodes_is_valid_and_spreads_by_its_gpus() -> None:
    found = review_trainjob(gang_trainjob(), S)
    assert found is not None
    assert (found.violations, found.warnings) == ((), ())
    gang = validate_trainjob(gang_trainjob(), S)
    assert gang is not None
    assert (gang.spec.count, gang.roles) == (4, (TRAINER_ROLE,))
    assert TRAINER_ROLE == "node"


def test_a_trainjob_without_our_keys_or_claims_is_not_ours() -> None:
    plain = gang_trainjob(patches=[runtime_patch({"node": {}})])
    plain["metadata"]["labels"], plain["metadata"]["annotations"] = {}, {}
    assert review_trainjob(plain, S) is None
    assert validate_trainjob(plain, S) is None


@given(st.integers(1, 64), st.integers(0, 70))
def test_count_must_equal_num_nodes_when_the_trainjob_sets_it(count: int, nodes: int) -> None:
    found = review_trainjob(gang_trainjob(count=count, num_nodes=nodes), S)
    assert found is not None
    mismatch = [v for v in found.violations if v.reason == "CountMismatch"]
    if count == nodes:
        assert mismatch == []
    else:
        (v,) = mismatch
        assert (v.key, v.value) == (k.COUNT, str(count))
        assert v.message == f"must equal spec.trainer.numNodes ({nodes})"


@given(st.integers(1, 64))
def test_without_num_nodes_the_count_is_left_to_the_provisioner(count: int) -> None:
    """The runtime's default numNodes is in no object the webhook reads: the provisioner
    checks count against the Workload's PodSets."""
    assert reasons(gang_trainjob(count=count, num_nodes=None)) == []


@pytest.mark.parametrize(
    ("raw", "roles"),
    [
        pytest.param(None, ("node",), id="default-the-trainer"),
        pytest.param("node", ("node",), id="node"),
        pytest.param(" launcher , node ", ("launcher", "node"), id="mpi-launcher-as-node"),
    ],
)
def test_gang_roles_default_to_the_trainer_nodes(raw: str | None, roles: tuple[str, ...]) -> None:
    tj = gang_trainjob(annotations={k.GANG_ROLES: raw})
    gang = validate_trainjob(tj, S)
    assert gang is not None
    assert gang.roles == roles


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        pytest.param("", "is empty", id="empty"),
        pytest.param(" , ", "is empty", id="only-commas"),
        pytest.param("node,node", "repeats node", id="repeated"),
        pytest.param("Node", "names no replicatedJob: 'Node'", id="upper-case"),
        pytest.param("dataset_initializer", "names no replicatedJob", id="underscore"),
        pytest.param("-node", "names no replicatedJob", id="leading-dash"),
        pytest.param("n" * 64, "names no replicatedJob", id="too-long"),
        pytest.param(",".join(f"r{i}" for i in range(65)), "more than 64", id="too-many"),
    ],
)
def test_gang_roles_must_be_replicated_job_names(raw: str, needle: str) -> None:
    found = review_trainjob(gang_trainjob(annotations={k.GANG_ROLES: raw}), S)
    assert found is not None
    (v,) = found.violations
    assert (v.reason, v.key) == ("InvalidGangRoles", k.GANG_ROLES)
    assert needle in v.message
    assert "default node, the trainer's" in v.message


AMI, AMI_OTHER = "ami-0123456789abcdef0", "ami-0fedcba9876543210"


@pytest.mark.parametrize(
    ("change", "s", "namespace", "expected"),
    [
        pytest.param(
            {"annotations": {k.INSTANCE_TYPE: "x9.nope"}}, S, None, {"InstanceTypeNotAllowed"},
            id="allowlist",
        ),
        pytest.param(
            {"annotations": {k.MAX_LIFETIME: "forever"}}, S, None, {"InvalidDuration"},
            id="annotation-syntax",
        ),
        pytest.param(
            {"annotations": {k.AMI_ID: AMI_OTHER}}, settings(allowedAmiIds=[AMI]), None,
            {"AmiNotAllowed"}, id="ami-allowlist",
        ),
        pytest.param(
            {"annotations": {"atomic-gang.k8s.aws/cuont": "4"}}, S, None, {"UnknownKey"},
            id="unknown-key",
        ),
        pytest.param(
            {"labels": {k.QUEUE_NAME_LABEL: None}}, S, None, {"NotQueued"}, id="not-queued",
        ),
        pytest.param(
            {"annotations": {k.ELASTIC_JOB: "true"}}, S, None, {"ElasticGang"}, id="elastic",
        ),
        pytest.param(
            {}, settings(poolNamespaces=[{"names": "pretrain-*", "namespaces": ["team-a"]}]),
            "team-b", {"PoolReserved"}, id="pool-reserved",
        ),
        pytest.param(
            {"labels": {k.POOL: None}}, S, None, {"IncompleteSet"}, id="no-pool",
        ),
    ],
)  # fmt: skip
def test_every_job_rule_applies_to_the_trainjob_metadata(
    change: dict[str, dict[str, str | None]], s: Any, namespace: str | None, expected: set[str]
) -> None:
    tj = gang_trainjob(**change)  # type: ignore[arg-type]
    assert set(reasons(tj, s=s, namespace=namespace)) == expected
    if namespace is None:
        with pytest.raises(GangValidationError):
            validate_trainjob(tj, s)


def test_manage_jobs_without_queue_name_lifts_the_queue_rule() -> None:
    tj = gang_trainjob(labels={k.QUEUE_NAME_LABEL: None})
    assert reasons(tj, s=settings(manageJobsWithoutQueueName=True)) == []


# Every way a pod spec patch reaches for gang nodes, as template.claims reads a Job's.
CLAIMS: dict[str, tuple[dict[str, Any], str, str]] = {
    "pool-selector": (
        {"nodeSelector": {k.POOL: "pretrain-p4d"}}, "ReservedSelectorKey", "nodeSelector",
    ),
    "group-selector": ({"nodeSelector": {k.GROUP: "g1"}}, "ReservedSelectorKey", "nodeSelector"),
    "required-affinity": (
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": k.POOL, "operator": "In", "values": ["pretrain-p4d"]}]}]}}}},
        "ReservedSelectorKey", "affinity.nodeAffinity",
    ),
    "preferred-affinity": (
        {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": k.GROUP, "operator": "Exists"}]}}]}}},
        "ReservedSelectorKey", "affinity.nodeAffinity",
    ),
    "gang-toleration": (
        {"tolerations": [{"key": k.GANG_TAINT, "operator": "Exists"}]},
        "ReservedToleration", "tolerations",
    ),
    "every-taint": (
        {"tolerations": [{"operator": "Exists"}]}, "ReservedToleration", "tolerations",
    ),
}  # fmt: skip


@pytest.mark.parametrize("claim", list(CLAIMS), ids=list(CLAIMS))
@pytest.mark.parametrize("gang", [True, False], ids=["gang", "plain"])
def test_no_runtime_patch_may_claim_gang_nodes_on_create(claim: str, gang: bool) -> None:
    pod, reason, where = CLAIMS[claim]
    tj = gang_trainjob(patches=[runtime_patch({"node": pod}, manager="example.com/team-a")])
    if not gang:
        tj["metadata"]["labels"], tj["metadata"]["annotations"] = {}, {}
    for user in (TENANT, KUEUE, TRAINER_CONTROLLER, ""):
        found = review_trainjob(tj, S, user=user)
        assert found is not None
        (v,) = found.violations
        assert v.reason == reason
        assert v.field.startswith(f"{PATCHED}.template.spec.template.spec.{where}"), v.field


def test_kueues_patch_with_our_pin_is_no_way_in_on_create() -> None:
    """The same claims Kueue writes on admission, in a TrainJob as it is created (by
    anyone, Kueue's own identity too: MultiKueue creates TrainJobs with it)."""
    tj = gang_trainjob(patches=[runtime_patch()])
    assert set(reasons(tj, user=KUEUE)) == {"ReservedSelectorKey", "ReservedToleration"}


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["node", "dataset-initializer", "launcher"]),
            st.sampled_from(sorted(CLAIMS)),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_each_claim_anywhere_in_the_patches_is_one_violation(
    patches: list[dict[str, str]],
) -> None:
    """Patches by several managers, each claiming on some replicatedJobs."""
    tj = gang_trainjob(
        patches=[
            runtime_patch({role: CLAIMS[c][0] for role, c in roles.items()}, manager=f"x.io/m{m}")
            for m, roles in enumerate(patches)
        ]
    )
    expected = sorted(CLAIMS[c][1] for roles in patches for c in roles.values())
    assert sorted(reasons(tj)) == expected


def _admitted(tj: dict[str, Any], pod: dict[str, Any] = PINNED_POD) -> dict[str, Any]:
    """What Kueue's RunWithPodSetsInfo leaves: our podSetUpdate as its runtime patch,
    the TrainJob unsuspended."""
    new = copy.deepcopy(tj)
    new["spec"]["runtimePatches"] = [runtime_patch({"node": pod})]
    new["spec"]["suspend"] = False
    return new


QUEUED = gang_trainjob(patches=[runtime_patch({})], suspend=True)  # Kueue's empty patch


def test_only_kueue_adds_our_pin_and_takes_it_back() -> None:
    admitted = _admitted(QUEUED)
    assert updated(QUEUED, admitted, KUEUE) == []
    restored = copy.deepcopy(admitted)
    restored["spec"]["suspend"] = True
    restored["spec"]["runtimePatches"] = [runtime_patch({})]
    assert updated(admitted, restored, KUEUE) == []
    for user in (TENANT, TRAINER_CONTROLLER, ""):
        assert set(updated(QUEUED, admitted, user)) == {
            "ReservedSelectorKey",
            "ReservedToleration",
        }, user
        assert set(updated(admitted, restored, user)) == {
            "ReservedSelectorKey",
            "ReservedToleration",
        }, user


def test_a_tenant_may_keep_kueues_claims_but_not_move_or_widen_them() -> None:
    admitted = _admitted(QUEUED)
    relabelled = copy.deepcopy(admitted)
    relabelled["metadata"]["labels"]["team"] = "a"
    assert updated(admitted, relabelled, TENANT) == []
    moved = copy.deepcopy(admitted)
    moved["spec"]["runtimePatches"] = [runtime_patch(manager="example.com/team-a")]
    assert set(updated(admitted, moved, TENANT)) == {"ReservedSelectorKey", "ReservedToleration"}
    widened = copy.deepcopy(admitted)
    widened["spec"]["runtimePatches"].append(
        runtime_patch({"dataset-initializer": PINNED_POD}, manager="example.com/team-a")
    )
    assert set(updated(admitted, widened, TENANT)) == {"ReservedSelectorKey", "ReservedToleration"}
    other_role = copy.deepcopy(admitted)
    other_role["spec"]["runtimePatches"] = [runtime_patch({"launcher": PINNED_POD})]
    assert set(updated(admitted, other_role, TENANT)) == {
        "ReservedSelectorKey",
        "ReservedToleration",
    }


def test_gang_keys_are_immutable_and_the_queue_label_and_parity_still_hold() -> None:
    old = gang_trainjob()
    assert set(updated(old, gang_trainjob(annotations={k.COUNT: "5"}), KUEUE)) == {
        "ImmutableGangField",
        "CountMismatch",
    }
    assert updated(old, gang_trainjob(labels={k.POOL: "other"}), TENANT) == ["ImmutableGangField"]
    assert updated(old, gang_trainjob(labels={k.QUEUE_NAME_LABEL: None}), TENANT) == ["NotQueued"]
    assert updated(old, gang_trainjob(annotations={k.ELASTIC_JOB: "true"}), TENANT) == [
        "ElasticGang"
    ]
    assert updated(old, copy.deepcopy(old), TENANT) == []
    plain = gang_trainjob()
    plain["metadata"]["labels"], plain["metadata"]["annotations"] = {}, {}
    assert review_trainjob_update(plain, copy.deepcopy(plain), S, user=TENANT) is None


@pytest.mark.parametrize("kind", ["labels", "annotations"])
def test_our_keys_in_a_patchs_jobset_metadata_are_in_the_wrong_place(kind: str) -> None:
    """The Trainer copies a patch's JobSet metadata onto its JobSet, which is no gang."""
    patch = runtime_patch({})
    patch["trainingRuntimeSpec"]["template"]["metadata"] = {kind: {k.POOL: "pretrain-p4d"}}
    tj = gang_trainjob(patches=[patch])
    found = review_trainjob(tj, S)
    assert found is not None
    (v,) = found.violations
    assert (v.reason, v.key) == ("WrongPlace", k.POOL)
    assert (
        v.field == f"spec.runtimePatches[0].trainingRuntimeSpec.template.metadata.{kind}[{k.POOL}]"
    )
    plain = copy.deepcopy(tj)
    plain["metadata"]["labels"], plain["metadata"]["annotations"] = {}, {}
    assert reasons(plain) == ["WrongPlace"]
    before = gang_trainjob(patches=[runtime_patch({})])
    assert updated(before, tj, TENANT) == ["WrongPlace"]
    assert updated(tj, copy.deepcopy(tj), KUEUE) == []  # already there: not new


def test_request_less_trainer_nodes_are_warned_and_a_patched_anti_affinity_clears_it() -> None:
    tj = gang_trainjob(gpus=False)
    found = review_trainjob(tj, S)
    assert found is not None
    assert found.violations == ()
    (warning,) = found.warnings
    assert warning.startswith("atomic-gang: the 4 gang pods may share nodes")
    assert "jobset.sigs.k8s.io/jobset-name: allreduce-trainjob" in warning
    spread = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {
                            "matchLabels": {"jobset.sigs.k8s.io/jobset-name": "allreduce-trainjob"}
                        },
                    }
                ]
            }
        }
    }
    apart = gang_trainjob(gpus=False, patches=[runtime_patch({"node": spread}, manager="x.io/a")])
    assert verdict(apart).warnings == ()
    other_role = gang_trainjob(
        gpus=False,
        annotations={k.GANG_ROLES: "launcher,node"},
        patches=[runtime_patch({"node": spread}, manager="x.io/a")],
    )
    assert len(verdict(other_role).warnings) == 1
    strict = settings(requireOnePodPerNode=True)
    assert reasons(tj, s=strict) == ["PodsNotSpread"]
    assert reasons(gang_trainjob(), s=strict) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param(("spec", "trainer", "numNodes"), "4", id="numNodes-string"),
        pytest.param(("spec", "trainer", "numNodes"), True, id="numNodes-bool"),
        pytest.param(("spec", "runtimePatches"), {"manager": "x"}, id="patches-not-a-list"),
        pytest.param(("spec", "runtimePatches"), [{"manager": "x"}] * 17, id="too-many-patches"),
        pytest.param(("spec", "runtimePatches"), ["x"], id="patch-not-an-object"),
    ],
)
def test_a_broken_trainjob_is_malformed(path: tuple[str, ...], value: Any) -> None:
    tj = gang_trainjob()
    here = tj
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    with pytest.raises(MalformedJobError):
        review_trainjob(tj, S)


def test_the_one_entry_point_judges_trainjobs_and_runtimes() -> None:
    assert review(gang_trainjob(count=3), S) is not None
    old = gang_trainjob()
    assert review_update(old, gang_trainjob(annotations={k.COUNT: "5"}), S, user=KUEUE)
    with pytest.raises(MalformedJobError, match="TrainingRuntime"):
        review({"apiVersion": "trainer.kubeflow.org/v1", "kind": "Nope"}, S)


# The torch runtime as Trainer v2.2.1 ships it (manifests/base/runtimes).
TORCH: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {
        "name": "torch-distributed", "labels": {"trainer.kubeflow.org/framework": "torch"},
    },
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node", "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"}
                ]}}},
            },
        }]}},
    },
}  # fmt: skip


def _runtime(kind: str, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    rt = copy.deepcopy(TORCH)
    rt["kind"] = kind
    if kind == "TrainingRuntime":
        rt["metadata"]["namespace"] = "team-a"
    rj = rt["spec"]["template"]["spec"]["replicatedJobs"][0]
    rj["template"]["spec"]["template"]["spec"].update(copy.deepcopy(pod or {}))
    return rt


@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
def test_the_torch_runtime_reaches_for_no_gang_node(kind: str) -> None:
    assert review(_runtime(kind), S) is None
    assert review_update(_runtime(kind), _runtime(kind), S, user=TENANT) is None
    # Its own metadata is not copied anywhere: our keys there are not ours to judge.
    labelled = _runtime(kind)
    labelled["metadata"]["labels"][k.POOL] = "pretrain-p4d"
    assert review(labelled, S) is None


@pytest.mark.parametrize("claim", list(CLAIMS), ids=list(CLAIMS))
@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
def test_a_runtime_may_claim_no_gang_node_whoever_writes_it(kind: str, claim: str) -> None:
    pod, reason, where = CLAIMS[claim]
    claiming = _runtime(kind, pod)
    for user in (TENANT, KUEUE, TRAINER_CONTROLLER, "system:admin"):
        for found in (
            review(claiming, S, user=user),
            review_update(_runtime(kind), claiming, S, user=user),
            review_update(claiming, copy.deepcopy(claiming), S, user=user),  # kept: still refused
        ):
            assert found is not None
            (v,) = found.violations
            assert v.reason == reason
            assert v.field.startswith(
                f"spec.template.spec.replicatedJobs[0].template.spec.template.spec.{where}"
            )
    assert review_update(claiming, _runtime(kind), S, user=TENANT) is None  # dropping it


def test_a_runtimes_pinned_claims_are_refused_too() -> None:
    """Pinned or not: only Kueue's admission of one TrainJob may pin pods to a gang."""
    found = review_runtime(_runtime("TrainingRuntime", PINNED_POD), S)
    assert found is not None
    assert {v.reason for v in found.violations} == {"ReservedSelectorKey", "ReservedToleration"}


def test_our_keys_in_a_runtimes_jobset_metadata_are_in_the_wrong_place() -> None:
    rt = _runtime("ClusterTrainingRuntime")
    rt["spec"]["template"]["metadata"] = {"annotations": {k.COUNT: "4"}}
    found = review_runtime(rt, S)
    assert found is not None
    (v,) = found.violations
    assert (v.reason, v.field) == ("WrongPlace", f"spec.template.metadata.annotations[{k.COUNT}]")


def test_the_kueue_patch_manager_is_kueues() -> None:
    assert KUEUE_PATCH == "kueue.x-k8s.io/manager"


def test_the_user_guides_trainjob_follows_every_rule() -> None:
    """The guide's example (held to the real Trainer CRD in tests/integration/kube)."""
    guide = Path(__file__).resolve().parents[3] / "docs" / "user-guide.md"
    section = guide.read_text(encoding="utf-8").split("\n## TrainJobs", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    example = yaml.safe_load(block)
    assert verdict(example, namespace="default") == Findings(())
    gang = validate_trainjob(example, S)
    assert gang is not None
    assert (gang.spec.count, gang.roles) == (example["spec"]["trainer"]["numNodes"], ("node",))
