"""Issue 12 acceptance: a node role the cluster does not let join is never launched for.

The node role's access entry is deleted in the simulated EKS; a gang Job is applied:
no launch call for its pool, and the Workload's check names the missing entry within
30 s. The entry is re-created (as an admin would, through the EKS API) and the same
Job runs to completion with nothing restarted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from atomic_gang.resources import EVENTS, JOBS
from atomic_gang_devstack import dev_objects
from atomic_gang_devstack.components.cloud import fakeaws_endpoint
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import job, unique
from tests.e2e.provisioner.harness import Replicas, World
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
CLUSTER = dev_objects.DEV_SETTINGS["clusterName"]
ROLE = dev_objects.DEV_SETTINGS["defaults"]["nodeRoleArn"]


@pytest.fixture(scope="module")
def eks(world: World) -> Any:
    return boto3.client(
        "eks",
        region_name="us-east-1",
        endpoint_url=fakeaws_endpoint(world.ctx),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def no_access_entry(eks: Any) -> Iterator[None]:
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=ROLE)
    try:
        yield
    finally:  # the stack is shared: whatever happened, the role may join again afterwards
        names = eks.list_access_entries(clusterName=CLUSTER)["accessEntries"]
        if ROLE not in names:
            eks.create_access_entry(clusterName=CLUSTER, principalArn=ROLE, type="EC2_LINUX")


@pytest.fixture
def replica(
    world: World, tmp_path_factory: pytest.TempPathFactory, no_access_entry: None
) -> Iterator[Replicas]:
    # Started after the entry is gone, so no earlier "yes" is cached in this process.
    reps = world.replicas(tmp_path_factory.mktemp("prov-access"), unique("lease"))
    reps.start("prov-a")
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith("prov-a"),
        timeout=30,
        what="prov-a leading",
    )
    yield reps
    reps.stop_all()


def test_no_launch_until_the_node_role_may_join(
    world: World, replica: Replicas, eks: Any, namespace: str
) -> None:
    label = unique("access")
    pool = gnp(namespace, label)
    submitted = world.submit(job("access", namespace, pool=label))
    fix = f"aws eks create-access-entry --cluster-name {CLUSTER} --principal-arn {ROLE}"

    def named() -> str | None:
        msg = str(world.check(submitted).get("message", ""))
        return msg if "no access entry" in msg and fix in msg else None

    message = wait_for(named, timeout=30, interval=0.02, what="the check naming the access entry")
    assert ROLE in message
    assert f"cluster {CLUSTER}" in message
    assert world.launches(pool) == []
    assert world.live(pool) == []

    def job_event() -> bool:  # events are written asynchronously
        return any(
            e["reason"] == "NodeRoleNotAuthorized" and e["involvedObject"]["kind"] == "Job"
            for e in world.kube.list(EVENTS, namespace=namespace).items
        )

    wait_for(job_event, timeout=30, what="a NodeRoleNotAuthorized event on the Job")
    assert world.launches(pool) == []

    eks.create_access_entry(clusterName=CLUSTER, principalArn=ROLE, type="EC2_LINUX")
    joining = world.wait_pool(
        pool, lambda p: p.status.phase == "Joining", timeout=60, what="a launch after the fix"
    )
    world.register_nodes(joining)
    world.wait_check(submitted, "Ready", timeout=60)

    def complete() -> bool:
        got = world.kube.get(JOBS, "access", namespace=namespace)
        conds = (got.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conds)

    wait_for(complete, timeout=90, what="the Job complete")
    assert len(world.launches(pool)) == 1
    assert replica.exited("prov-a") is None  # nothing was restarted
