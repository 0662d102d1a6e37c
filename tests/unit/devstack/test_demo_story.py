"""The demo's narration over a scripted run: lines, milestones and the final checks."""

from __future__ import annotations

import itertools
from dataclasses import replace

from atomic_gang_devstack.demo.observe import NodeState, PodState, Snapshot
from atomic_gang_devstack.demo.story import Story

IDS = ("i-1", "i-2")
GROUP = "p-g1"


def _nodes(ready: int, total: int = 2) -> dict[str, NodeState]:
    return {
        f"ip-{n}": NodeState(ready=n < ready, instance_id=IDS[n], zone="us-east-1a", group=GROUP)
        for n in range(total)
    }


def _script() -> list[Snapshot]:
    s0 = Snapshot()
    s1 = replace(s0, quota_reserved=True, check_state="Pending", pool_phase="Acquiring")
    s2 = replace(s1, pool_phase="Joining", instance_ids=IDS, group=GROUP, live_instances=2)
    s3 = replace(s2, nodes=_nodes(1, 1))
    s4 = replace(s3, nodes=_nodes(2), check_state="Ready", admitted=True, pool_phase="Satisfied")
    pods = {f"pod-{n}": PodState(phase="Running", node=f"ip-{n}") for n in range(2)}
    s5 = replace(s4, pods=pods)
    done = {k: PodState(phase="Succeeded", node=v.node) for k, v in pods.items()}
    s6 = replace(s5, pods=done, job_complete=True, pool_phase="KeepWarm", keep_warm_until="T")
    s7 = replace(s6, pool_phase="Idle", pool_events=(("KeepWarmExpired", "releasing"),))
    s8 = replace(s7, live_instances=0, nodes={})
    return [s0, s1, s2, s3, s4, s5, s6, s7, s8]


def _play(snaps: list[Snapshot]) -> tuple[Story, list[str]]:
    story, lines = Story(pool="p", count=2), []
    story.mark("applied", 0.0)
    for t, (prev, cur) in enumerate(itertools.pairwise(snaps), start=1):
        lines += story.update(prev, cur, float(t))
    return story, lines


def test_a_good_run_reads_well_and_passes_every_check() -> None:
    story, lines = _play(_script())
    assert "pool p: Acquiring → Joining" in lines
    assert "node ip-0 Ready (1/2)" in lines
    assert "Kueue: Workload admitted (2/2 gang nodes Ready)" in lines
    assert "pod pod-1 → ip-1" in lines
    assert "pool p: KeepWarmExpired: releasing" in lines
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
    summary = story.summary({"RunInstances": 1})
    assert "AWS calls by the provisioner for this Job: RunInstances 1" in summary


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
