"""The demo's narration over scripted runs of every sample (a gang Job, a gang JobSet
with a driver off the gang, a gang TrainJob whose dataset initializer runs off the gang
before its trainers): lines, milestones and the final checks."""

from __future__ import annotations

import itertools
from dataclasses import replace

from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack.demo.observe import NodeState, PodState, Snapshot
from atomic_gang_devstack.demo.samples import JOB, JOBSET, TRAINJOB, Sample
from atomic_gang_devstack.demo.story import Story

IDS = ("i-1", "i-2")
GROUP = "default.p-g1"
# Pool label "p" in the samples' namespace names pool "default.p".
SAMPLE = replace(JOB, pool_label="p", count=2)
# The JobSet sample scaled to the script: 2 workers pods on the gang, a driver off it.
JOBSET_SAMPLE = replace(JOBSET, pool_label="p", count=2)
# The TrainJob sample scaled to the script: 2 trainer pods after the initializer's.
TRAINJOB_SAMPLE = replace(TRAINJOB, pool_label="p", count=2)
INITIALIZER_POD = "tj-dataset-initializer-0-0"
JOB_PODS = {f"pod-{n}": PodState(phase="Running", node=f"ip-{n}") for n in range(2)}
JOBSET_PODS = {
    **{f"js-workers-{n}": PodState("Running", f"ip-{n}", role="workers") for n in range(2)},
    "js-driver-0": PodState("Running", "kwok-node-0", role="driver"),
}


def _nodes(ready: int, total: int = 2) -> dict[str, NodeState]:
    return {
        f"ip-{n}": NodeState(ready=n < ready, instance_id=IDS[n], zone="us-east-1a", group=GROUP)
        for n in range(total)
    }


def _script(
    pods: dict[str, PodState] = JOB_PODS, pod_sets: tuple[str, ...] = ("main",)
) -> list[Snapshot]:
    s0 = Snapshot()
    s1 = replace(s0, quota_reserved=True, check_state="Pending", pool_phase="Acquiring")
    s2 = replace(s1, pool_phase="Joining", instance_ids=IDS, group=GROUP, live_instances=2)
    s3 = replace(s2, nodes=_nodes(1, 1))
    s4 = replace(
        s3,
        nodes=_nodes(2),
        check_state="Ready",
        check_message="2/2 nodes Ready",
        check_pod_sets=pod_sets,
        admitted=True,
        pool_phase="Satisfied",
    )
    s5 = replace(s4, pods=pods)
    done = {k: replace(v, phase="Succeeded") for k, v in pods.items()}
    s6 = replace(s5, pods=done, completed=True, pool_phase="KeepWarm", keep_warm_until="T")
    s7 = replace(s6, pool_phase="Idle", pool_events=(("KeepWarmExpired", "releasing"),))
    s8 = replace(s7, live_instances=0, nodes={})
    return [s0, s1, s2, s3, s4, s5, s6, s7, s8]


def _jobset_script() -> list[Snapshot]:
    return _script(JOBSET_PODS, pod_sets=("workers",))


def _trainjob_script(initializer_node: str = "kwok-node-0") -> list[Snapshot]:
    """The initializer runs first (the trainers' Job waits for it), then the trainers."""
    trainers = {
        f"tj-node-0-{n}": PodState("Running", f"ip-{n}", role=tm.TRAINER_ROLE) for n in range(2)
    }
    init = PodState("Running", initializer_node, role=tm.INITIALIZER_ROLE)
    snaps = _script({**trainers, INITIALIZER_POD: init}, pod_sets=(tm.TRAINER_ROLE,))
    initializing = replace(snaps[5], pods={INITIALIZER_POD: init})
    snaps[5] = replace(
        snaps[5], pods={**trainers, INITIALIZER_POD: replace(init, phase="Succeeded")}
    )
    return [*snaps[:5], initializing, *snaps[5:]]


def _play(snaps: list[Snapshot], sample: Sample = SAMPLE) -> tuple[Story, list[str]]:
    story, lines = Story(sample), []
    story.mark("applied", 0.0)
    for t, (prev, cur) in enumerate(itertools.pairwise(snaps), start=1):
        lines += story.update(prev, cur, float(t))
    return story, lines


def test_a_good_run_reads_well_and_passes_every_check() -> None:
    story, lines = _play(_script())
    assert "pool default.p: Acquiring → Joining" in lines
    assert "node ip-0 Ready (1/2)" in lines
    assert "Kueue: Workload admitted (2/2 gang nodes Ready)" in lines
    assert "pod pod-1 → ip-1" in lines
    assert "pool default.p: KeepWarmExpired: releasing" in lines
    assert "node ip-1 deleted (its instance is gone)" in lines
    assert story.done
    assert story.ok
    assert list(story.milestones) == [
        "applied",
        "quota",
        "launched",
        "first-node",
        "all-ready",
        "check-ready",
        "admitted",
        "pods-running",
        "complete",
        "keep-warm",
        "releasing",
        "released",
    ]
    assert "check Ready: 2/2 nodes Ready (podSetUpdates for main)" in lines
    assert "Job complete" in lines
    summary = story.summary({"RunInstances": 1})
    assert "AWS calls by the provisioner for this Job: RunInstances 1" in summary
    assert "     0.0  Job applied (kubectl apply)" in summary
    assert "     5.0  all 2 pods Running on the gang" in summary
    assert len(story.checks()) == 3  # a Job has no role off the gang


def test_admission_before_all_nodes_ready_fails_the_check() -> None:
    snaps = _script()
    snaps[3] = replace(snaps[3], admitted=True)  # admitted with 1/2 nodes Ready
    story, _ = _play(snaps)
    assert not story.ok
    assert story.checks()[0].startswith("FAIL")


def test_a_pod_off_the_gang_fails_the_check() -> None:
    snaps = _script()
    stray = {"pod-x": PodState(phase="Running", node="kwok-node-0")}
    snaps[5] = replace(snaps[5], pods={**snaps[5].pods, **stray})
    story, _ = _play(snaps)
    assert story.checks()[1].startswith("FAIL")


def test_two_pods_on_one_node_fail_the_placement_check() -> None:
    snaps = _script()
    doubled = {f"pod-{n}": PodState(phase="Running", node="ip-0") for n in range(2)}
    snaps[5] = replace(snaps[5], pods=doubled)
    story, _ = _play(snaps)
    line = (
        "FAIL  every pod ran on a node of the gang (1 nodes, 2 pods: some nodes ran more than one)"
    )
    assert story.checks()[1] == line
    assert not story.ok


def test_fewer_pods_than_the_gang_fail_the_placement_check() -> None:
    snaps = _script()
    for i in range(5, len(snaps)):  # pod-1 never exists
        snaps[i] = replace(snaps[i], pods={k: v for k, v in snaps[i].pods.items() if k != "pod-1"})
    story, _ = _play(snaps)
    assert story.checks()[1].startswith("FAIL")
    assert "(1 nodes, one pod each)" in story.checks()[1]


def test_a_good_run_names_the_distinct_nodes() -> None:
    story, _ = _play(_script())
    assert story.checks()[1] == "ok    every pod ran on a node of the gang (2 nodes, one pod each)"


def test_a_good_jobset_run_narrates_both_roles_and_passes_every_check() -> None:
    story, lines = _play(_jobset_script(), JOBSET_SAMPLE)
    assert "check Ready: 2/2 nodes Ready (podSetUpdates for workers)" in lines
    assert "pod js-workers-1 → ip-1 (workers, a gang node)" in lines
    assert "pod js-driver-0 → kwok-node-0 (driver, an ordinary node)" in lines
    assert "JobSet completed" in lines
    assert story.done
    assert story.checks() == [
        "ok    admitted only after 2/2 nodes were Ready",
        "ok    every workers pod ran on a node of the gang (2 nodes, one pod each)",
        "ok    the driver pod ran on no gang node (kwok-node-0)",
        "ok    released: no instance of the pool left in EC2",
    ]
    assert story.ok
    summary = story.summary({"RunInstances": 1})
    assert "     0.0  JobSet applied (kubectl apply)" in summary
    assert "     5.0  all 2 workers pods Running on the gang" in summary
    assert "     5.0  driver pod Running on an ordinary node" in summary
    assert "     6.0  JobSet completed" in summary
    assert "AWS calls by the provisioner for this JobSet: RunInstances 1" in summary


def test_the_driver_on_a_gang_node_fails_the_off_gang_check() -> None:
    snaps = _jobset_script()
    for i in range(5, len(snaps)):  # the driver lands on ip-0, beside a worker
        pods = dict(snaps[i].pods)
        pods["js-driver-0"] = replace(pods["js-driver-0"], node="ip-0")
        snaps[i] = replace(snaps[i], pods=pods)
    story, lines = _play(snaps, JOBSET_SAMPLE)
    assert "pod js-driver-0 → ip-0 (driver, a gang node)" in lines
    assert story.checks()[1].startswith("ok")  # the workers themselves are placed well
    assert story.checks()[2] == "FAIL  the driver pod ran on no gang node (ip-0)"
    assert "ordinary-running" not in story.milestones
    assert not story.ok


def test_a_driver_never_scheduled_fails_the_off_gang_check() -> None:
    snaps = _jobset_script()
    for i in range(5, len(snaps)):
        pods = {k: v for k, v in snaps[i].pods.items() if k != "js-driver-0"}
        snaps[i] = replace(snaps[i], pods=pods)
    story, _ = _play(snaps, JOBSET_SAMPLE)
    assert story.checks()[2] == "FAIL  the driver pod ran on no gang node (never scheduled)"
    assert not story.ok


def test_the_driver_does_not_count_toward_the_gang() -> None:
    """One worker missing: the driver's pod does not make up the gang's count."""
    snaps = _jobset_script()
    for i in range(5, len(snaps)):
        pods = {k: v for k, v in snaps[i].pods.items() if k != "js-workers-1"}
        snaps[i] = replace(snaps[i], pods=pods)
    story, _ = _play(snaps, JOBSET_SAMPLE)
    assert "pods-running" not in story.milestones
    assert story.checks()[1] == (
        "FAIL  every workers pod ran on a node of the gang (1 nodes, one pod each)"
    )
    assert not story.ok


def test_nodes_ready_in_one_poll_count_up() -> None:
    snaps = _script()
    del snaps[3]  # both nodes register and turn Ready between two polls
    _, lines = _play(snaps)
    assert [line for line in lines if line.startswith("node ") and " Ready (" in line] == [
        "node ip-0 Ready (1/2)",
        "node ip-1 Ready (2/2)",
    ]


def test_the_timeline_reads_in_time_order() -> None:
    story = Story(JOBSET_SAMPLE)
    story.mark("applied", 0.0)
    story.mark("pods-running", 5.7)  # the last worker starts after the driver
    story.mark("ordinary-running", 5.4)
    story.mark("admitted", 5.4)
    timeline = story.summary({})[2:5]
    assert timeline == [
        "     0.0  JobSet applied (kubectl apply)",
        "     5.4  Workload admitted",
        "     5.4  driver pod Running on an ordinary node",
    ]


def test_a_good_trainjob_run_puts_the_initializer_off_the_gang_and_passes_every_check() -> None:
    story, lines = _play(_trainjob_script(), TRAINJOB_SAMPLE)
    assert "check Ready: 2/2 nodes Ready (podSetUpdates for node)" in lines
    assert f"pod {INITIALIZER_POD} → kwok-node-0 (dataset-initializer, an ordinary node)" in lines
    assert "pod tj-node-0-1 → ip-1 (node, a gang node)" in lines
    assert "TrainJob complete" in lines
    assert story.done
    assert story.checks() == [
        "ok    admitted only after 2/2 nodes were Ready",
        "ok    every trainer pod ran on a node of the gang (2 nodes, one pod each)",
        "ok    the dataset-initializer pod ran on no gang node (kwok-node-0)",
        "ok    released: no instance of the pool left in EC2",
    ]
    assert story.ok
    summary = story.summary({"RunInstances": 1})
    assert summary[2] == "     0.0  TrainJob applied (kubectl apply)"
    initializer = summary.index("     5.0  dataset-initializer pod Running on an ordinary node")
    assert summary[initializer + 1 : initializer + 3] == [  # then the trainers
        "     6.0  all 2 trainer pods Running on the gang",
        "     7.0  TrainJob complete",
    ]
    assert "AWS calls by the provisioner for this TrainJob: RunInstances 1" in summary


def test_the_initializer_on_a_gang_node_fails_the_off_gang_check() -> None:
    story, lines = _play(_trainjob_script(initializer_node="ip-0"), TRAINJOB_SAMPLE)
    assert f"pod {INITIALIZER_POD} → ip-0 (dataset-initializer, a gang node)" in lines
    assert story.checks()[1].startswith("ok")  # the initializer is no trainer pod
    assert story.checks()[2] == "FAIL  the dataset-initializer pod ran on no gang node (ip-0)"
    assert "ordinary-running" not in story.milestones
    assert not story.ok
