"""Each way one tenant could take, squat on, sit on or see another's gang, tried by a
tenant holding only `edit` in its own namespace, and what stops it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomic_gang import keys
from atomic_gang.resources import EVENTS, JOBS, POOLS, WORKLOADS, Resource
from tests.e2e.kube import Kube
from tests.e2e.names import gnp
from tests.e2e.system.harness import System, condition, sample_job
from tests.e2e.tenancy.conftest import TEAM_A, TEAM_B, Tenants, unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
PROVISIONER = "atomic-gang-provisioner-0"
PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
POLICY_DENIAL = "gang nodes belong to their gang"


def submit(kube: Kube, job: dict[str, Any]) -> dict[str, Any]:
    kube.apply(job)
    found: dict[str, Any] = kube.get(
        "job", job["metadata"]["name"], "-n", job["metadata"]["namespace"]
    )
    return found


def check_of(system: System, job: dict[str, Any]) -> dict[str, Any]:
    return system.world.check(job)


def wait_check(
    system: System, job: dict[str, Any], state: str, timeout: float = 90
) -> dict[str, Any]:
    return system.world.wait_check(job, state, timeout=timeout)


def messages_in(system: System, namespace: str) -> list[str]:
    """Every Event message and check message a tenant can read in its namespace."""
    events = [
        str(e.get("message", "")) for e in system.kube.list(EVENTS, namespace=namespace).items
    ]
    checks = [
        str(c.get("message", ""))
        for w in system.kube.list(WORKLOADS, namespace=namespace).items
        for c in (w.get("status") or {}).get("admissionChecks") or []
    ]
    return events + checks


# Tenant A's gangs run in a zone tenant B's never name: a shape value of A's alone.
A_ZONE = "us-east-1b"


def a_sample(name: str, label: str, **ann: str) -> dict[str, Any]:
    """Tenant A's gang Job of 2 on its pool ``label``, in ``A_ZONE``."""
    return sample_job(name, TEAM_A, pool=label, count=2, availability_zones=A_ZONE, **ann)


def secrets_of_a(system: System) -> set[str]:
    """What names tenant A's gangs: its namespace, Job and Workload names, pools, groups,
    instance ids, and its shape's zone."""
    found = {TEAM_A, A_ZONE}
    for res in (JOBS, WORKLOADS):
        found |= {o["metadata"]["name"] for o in system.kube.list(res, namespace=TEAM_A).items}
    for obj in system.kube.list(POOLS).items:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if spec.get("ownerNamespace") == TEAM_A:
            found |= {obj["metadata"]["name"], *(status.get("instanceIds") or ())}
            found |= {g for g in (status.get("activeGroup"),) if g}
    return found


def readable_by_b(t: Tenants) -> dict[str, str]:
    """Everything tenant B reads about its gangs, by where: its Jobs, Workloads and
    Events whole, and `atomic-gang explain` of each of its Jobs, run with its token."""
    seen: dict[str, str] = {}
    for res in (JOBS, WORKLOADS, EVENTS):
        for obj in t.system.kube.list(res, namespace=TEAM_B).items:
            seen[f"{res.kind} {obj['metadata']['name']}"] = json.dumps(obj)
    for job in t.system.kube.list(JOBS, namespace=TEAM_B).items:
        name = job["metadata"]["name"]
        if keys.POOL not in (job["metadata"].get("labels") or {}):
            continue
        done = subprocess.run(
            [sys.executable, "-m", "atomic_gang_cli", "explain", "--kubeconfig",
             str(t.b.kubeconfig), f"{TEAM_B}/{name}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        seen[f"explain {name}"] = done.stdout + done.stderr
    return seen


def assert_nothing_of_a(t: Tenants) -> None:
    """Nothing tenant B can read names anything of tenant A's gangs."""
    secrets = secrets_of_a(t.system)
    leaked = {
        (where, secret)
        for where, text in readable_by_b(t).items()
        for secret in secrets
        if secret in text
    }
    assert leaked == set(), sorted(leaked)


def wait_policy_refusal(system: System, owner: str, what: str) -> str:
    """A controller's FailedCreate Event in tenant B's namespace, for an object whose name
    starts with ``owner``, that quotes the gang-node policy's denial."""

    def refused() -> str | None:
        for e in system.kube.list(EVENTS, namespace=TEAM_B).items:
            about = str((e.get("involvedObject") or {}).get("name", ""))
            message = str(e.get("message", ""))
            refusal = e.get("reason") == "FailedCreate" and POLICY_DENIAL in message
            if refusal and about.startswith(owner):
                return message
        return None

    return wait_for(refused, timeout=60, what=what)


def a_live_gang(t: Tenants, label: str) -> dict[str, Any]:
    """Tenant A's gang of 2 on its pool ``label``, admitted and running for a minute."""
    job = submit(t.a, a_sample(unique("a"), label, runs_for="60s"))
    wait_check(t.system, job, "Ready")
    return job


def b_runs(t: Tenants, kind: str, name: str, pod_spec: dict[str, Any], **spec: Any) -> None:
    """Tenant B applies a DaemonSet or Deployment ``name`` of pods with ``pod_spec``."""
    labels = {"app": name}
    t.b.apply(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": TEAM_B},
            "spec": {
                **spec,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        }
    )


def a_warm_set(t: Tenants, label: str) -> dict[str, Any]:
    job = submit(
        t.a,
        a_sample(unique("a"), label, runs_for="1s", keep_warm_ttl="3m"),
    )
    wait_for(lambda: t.system.complete(job), timeout=120, what="A's Job complete")
    t.system.world.wait_pool(
        gnp(TEAM_A, label), lambda p: p.status.phase == "KeepWarm", what="A's set warm"
    )
    return job


def test_a_warm_set_is_not_reused_by_another_namespace(tenants: Tenants) -> None:
    """B's Job with A's pool label names B's own pool: it launches a set of its own and
    never reaches A's warm set, which A's next Job reuses."""
    t, label = tenants, unique("warm")
    pool, b_pool = gnp(TEAM_A, label), gnp(TEAM_B, label)
    a_warm_set(t, label)
    launches = len(t.system.controller_calls("RunInstances", pool))

    b_job = submit(t.b, sample_job(unique("b"), TEAM_B, pool=label, count=2, keep_warm_ttl="3m"))
    wait_check(t.system, b_job, "Ready")
    theirs = t.system.world.pool(b_pool)
    assert theirs is not None
    assert theirs.spec.ownerNamespace == TEAM_B
    assert t.system.controller_calls("RunInstances", b_pool)  # a set of B's own
    p = t.system.world.pool(pool)
    assert p is not None
    assert p.spec.claim is None
    assert p.spec.ownerNamespace == TEAM_A
    assert p.status.phase == "KeepWarm"  # still A's warm set
    assert not set(p.status.instanceIds) & set(theirs.status.instanceIds)

    # A's next Job reuses it: no launch.
    again = submit(t.a, a_sample(unique("a2"), label, runs_for="1s"))
    wait_check(t.system, again, "Ready")
    assert len(t.system.controller_calls("RunInstances", pool)) == launches
    assert_nothing_of_a(t)


def test_a_running_gang_is_not_adopted_by_another_namespace(tenants: Tenants) -> None:
    """B's Job with the label of A's running gang gets a gang of its own, on Nodes of its
    own; A's claim never moves."""
    t, label = tenants, unique("live")
    pool, b_pool = gnp(TEAM_A, label), gnp(TEAM_B, label)
    a_live_gang(t, label)
    b_job = submit(t.b, sample_job(unique("b"), TEAM_B, pool=label, count=2, runs_for="60s"))
    wait_check(t.system, b_job, "Ready")
    theirs = t.system.world.pool(b_pool)
    assert theirs is not None
    assert theirs.spec.claim is not None
    assert theirs.spec.claim.namespace == TEAM_B
    p = t.system.world.pool(pool)
    assert p is not None
    assert p.spec.claim is not None
    assert p.spec.claim.namespace == TEAM_A
    assert not set(t.system.gang_nodes(pool)) & set(t.system.gang_nodes(b_pool))
    assert_nothing_of_a(t)


def test_squatting_costs_the_squatter_never_the_owner(tenants: Tenants) -> None:
    t = tenants
    # A name the admin reserved for A: B's Job is Rejected at once.
    reserved = submit(t.b, sample_job(unique("b"), TEAM_B, pool=unique("a-only-nightly"), count=2))
    rejected = wait_check(t.system, reserved, "Rejected")
    assert "reserved for other namespaces" in rejected["message"]

    # An unreserved label B used first, in a shape that cannot launch: it named B's own
    # pool, so A's Job with the same label is admitted on A's pool as if B's did not
    # exist, never delayed nor refused, and learns nothing of B's shape.
    label, zone = unique("nightly"), "us-east-1c"
    b_pool = gnp(TEAM_B, label)
    t.system.fake.set_capacity(zone, "p5.48xlarge", 0)
    try:
        squat = sample_job(
            unique("b"),
            TEAM_B,
            pool=label,
            count=2,
            instance_type="p5.48xlarge",
            availability_zones=zone,
        )
        submit(t.b, squat)
        t.system.world.wait_pool(
            b_pool, lambda p: p.spec.ownerNamespace == TEAM_B, what="B's squat"
        )
        a_job = submit(t.a, a_sample(unique("a"), label))
        ready = wait_check(t.system, a_job, "Ready")
        assert not ready.get("retryCount")  # never sent back to the queue
        assert "p5" not in ready["message"]
        assert TEAM_B not in ready["message"]
        ours = t.system.world.pool(gnp(TEAM_A, label))
        assert ours is not None
        assert ours.spec.ownerNamespace == TEAM_A
        squatted = t.system.world.pool(b_pool)
        assert squatted is not None
        assert squatted.spec.ownerNamespace == TEAM_B
        assert squatted.status.instanceIds == []  # B's shape still cannot launch
        assert_nothing_of_a(t)
    finally:
        t.system.fake.set_capacity(zone, "p5.48xlarge", None)


def test_a_managed_placement_group_of_another_team_is_denied(tenants: Tenants) -> None:
    """A's gang in a placement group the provisioner made for its pool: B's Job naming
    that group is denied at apply time (no instance of B's can take room in it, nor keep
    A's release from deleting it), and so is any group while the admin lists none."""
    t, label = tenants, unique("placed")
    a_job = submit(t.a, a_sample(unique("a"), label, runs_for="60s", placement="cluster"))
    wait_check(t.system, a_job, "Ready")
    placed = t.system.world.pool(gnp(TEAM_A, label))
    assert placed is not None
    group = placed.status.placementGroup
    assert group.startswith("atomic-gang-")
    for name in (group, "some-existing-group"):
        job = sample_job(unique("b"), TEAM_B, pool=unique("b"), count=2, placement_group_name=name)
        done = t.b.apply(job, check=False)
        assert done.returncode != 0, name
        assert "PlacementGroupNotAllowed" in done.stderr, done.stderr
    denied = f"metadata.name={job['metadata']['name']}"
    assert t.system.kube.list(JOBS, namespace=TEAM_B, field_selector=denied).items == []


def test_a_tenants_daemonset_gets_no_pod_on_gang_nodes(tenants: Tenants) -> None:
    t, label = tenants, unique("ds")
    pool = gnp(TEAM_A, label)
    a_live_gang(t, label)
    name = unique("miner")
    miner = {
        "nodeSelector": {keys.POOL: pool},
        "tolerations": [{"key": keys.GANG_TAINT, "operator": "Exists"}],
        "containers": [
            {"name": "m", "image": "miner", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
        ],
    }
    b_runs(t, "DaemonSet", name, miner)

    wait_policy_refusal(t.system, name, "the DaemonSet controller refused by the policy")
    pods = t.system.kube.list(PODS, namespace=TEAM_B).items
    assert [p for p in pods if p["metadata"]["name"].startswith(name)] == []


def test_a_node_name_pod_cannot_tolerate_its_way_onto_a_gang_node(tenants: Tenants) -> None:
    """nodeName skips the scheduler; the NoExecute gang taint makes the kubelet refuse
    a Pod without its toleration (tests/e2e/cluster/test_node_name.py, on a real
    kubelet), and the policy refuses the toleration to a tenant's Pod and Deployment."""
    t, label = tenants, unique("nodename")
    a_live_gang(t, label)
    node = next(iter(t.system.gang_nodes(gnp(TEAM_A, label))))
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": unique("squat"), "namespace": TEAM_B},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": keys.GANG_TAINT, "operator": "Exists"}],
            "containers": [{"name": "s", "image": "squat"}],
        },
    }
    done = t.b.apply(pod, check=False)
    assert done.returncode != 0
    assert POLICY_DENIAL in done.stderr
    deploy_name = unique("squat-deploy")
    b_runs(t, "Deployment", deploy_name, pod["spec"], replicas=1)

    wait_policy_refusal(t.system, deploy_name, "the Deployment's ReplicaSet refused by the policy")
    # Without the toleration admission has nothing to refuse; the NoExecute gang taint
    # gets the Pod evicted by the taint-eviction controller, as on every real cluster.
    bare_name = unique("bare")
    bare = {
        **pod,
        "metadata": {"name": bare_name, "namespace": TEAM_B},
        "spec": {k: v for k, v in pod["spec"].items() if k != "tolerations"},
    }
    assert t.b.apply(bare).returncode == 0

    def evicted() -> bool | None:
        found = t.system.kube.list(
            PODS, namespace=TEAM_B, field_selector=f"metadata.name={bare_name}"
        ).items
        return True if not found or found[0]["metadata"].get("deletionTimestamp") else None

    wait_for(evicted, timeout=60, what="the bare nodeName pod evicted from the gang node")


def test_a_crafted_workload_never_pairs_with_another_namespaces_job(tenants: Tenants) -> None:
    t, label = tenants, unique("crafted")
    pool = gnp(TEAM_A, label)
    a_job = a_live_gang(t, label)
    crafted: dict[str, Any] = {
        "apiVersion": WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": {
            "name": unique("crafted"),
            "namespace": TEAM_B,
            "labels": {"kueue.x-k8s.io/job-uid": a_job["metadata"]["uid"]},
        },
        "spec": {
            "queueName": "atomic-gang-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "i"}],
                        }
                    },
                }
            ],
        },
    }
    if t.b.apply(crafted, check=False).returncode != 0:
        t.system.kubectl.apply(crafted)  # edit may not: then an admin's mistake, same outcome
    name = crafted["metadata"]["name"]

    def settled() -> dict[str, Any] | None:
        """Kueue (>= v0.18, FinishOrphanedWorkloads) finishes a Workload that has a
        job-uid label and no owner; otherwise our check rejects it."""
        wl = t.system.kube.get(WORKLOADS, name, namespace=TEAM_B)
        status = wl.get("status") or {}
        checks = [c for c in status.get("admissionChecks") or [] if c.get("state") != "Pending"]
        finished = condition(wl, "Finished")
        return (checks[0] if checks else finished) if (checks or finished) else None

    outcome = wait_for(settled, timeout=60, what="the crafted Workload finished or rejected")
    if "state" in outcome:
        assert outcome["state"] == "Rejected", outcome
        assert "has no owner" in outcome["message"]
    p = t.system.world.pool(pool)
    assert p is not None
    assert p.spec.claim is not None
    assert p.spec.claim.namespace == TEAM_A
    assert_nothing_of_a(t)


def test_200_parked_connections_to_the_controller_port_hold_a_bounded_number_of_threads(
    tenants: Tenants,
) -> None:
    system = tenants.system
    port = system.ctx.port(PROVISIONER)
    pid = system.ctx.state.procs[PROVISIONER].pid

    def threads() -> int:
        # The restart supervisor's child is the provisioner: count every thread under it.
        total = 0
        for child in os.listdir("/proc"):
            if child.isdigit():
                try:
                    status = Path(f"/proc/{child}/status").read_text()
                except OSError:
                    continue
                if f"PPid:\t{pid}\n" in status or child == str(pid):
                    total += int(status.split("Threads:\t")[1].split()[0])
        return total

    before = threads()
    parked = []
    try:
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            parked.append(s)
        # One thread and one timer per held connection; the shed ones' threads are ending.
        wait_for(
            lambda: threads() - before <= 2 * 32 + 4, timeout=30, what="threads back under the cap"
        )
    finally:
        for s in parked:
            s.close()
    wait_for(
        lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200,
        timeout=30,
        what="/healthz answering",
    )
