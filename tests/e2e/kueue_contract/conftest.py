"""The Kueue contract on every Kueue we support: the pinned default and the spec's floor
(``KUEUE_FLOOR_VERSION``), each on a complete stack of its own (control plane, that
Kueue, moto + layer, webhook, one provisioner, the node-join simulator). Every test of
this package runs once per version; its id names the version (``[kueue-v0.18.3]``).

Kueue's ``waitForPodsReady`` timeout is short here (``PODS_READY_TIMEOUT``) so that a
gang whose pods never become Ready is evicted within the test; shortfalls turn into
Retry after two attempts with a one-second requeue.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from atomic_gang.resources import WORKLOADS
from atomic_gang_devstack.bins import Bins
from atomic_gang_devstack.state import StackOptions
from tests.e2e.kube import queued_namespace
from tests.e2e.kueue_contract.harness import WorkloadLog
from tests.e2e.system.harness import System, running

_PINS = Bins.load().pins
VERSIONS = (_PINS["KUEUE"], _PINS["KUEUE_FLOOR"])
PODS_READY_TIMEOUT_SECONDS = 15
SETTINGS = {
    "joinDeadlineSeconds": 60,
    "healthGraceSeconds": 3,
    "acquireAttemptsBeforeRetry": 2,
    "acquireRetry": {"backoffBaseSeconds": 0.3, "backoffMaxSeconds": 1.0},
}


@pytest.fixture(scope="package", params=VERSIONS, ids=[f"kueue-{v}" for v in VERSIONS])
def kueue(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[System]:
    """The whole stack on one Kueue version (torn down before the next version's starts)."""
    version = str(request.param)
    state_dir = tmp_path_factory.mktemp(f"kueue-{version}")
    options = StackOptions(
        state_dir=state_dir,
        detach=False,
        check_stand_in=False,  # the provisioner itself marks the AdmissionCheck Active
        fake_nodes=1,
        cloud=True,
        provisioners=1,
        nodesim=True,
        boot_delay=0.5,
        boot_jitter=0.5,
        kueue_version=version,
        pods_ready_timeout=f"{PODS_READY_TIMEOUT_SECONDS}s",
        provisioner_settings=SETTINGS,
    )
    with running(options) as system:
        yield system


@pytest.fixture
def namespace(kueue: System, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace with the LocalQueue ``atomic-gang-queue``."""
    # Short enough that a pool's name, ``<namespace>.<label>``, stays within 63 characters.
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.originalname.lower()).strip("-")[:24]
    name = f"kc-{slug.rstrip('-')}-{uuid.uuid4().hex[:6]}"
    queued_namespace(kueue.kubectl, name)
    yield name
    kueue.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def log(kueue: System, namespace: str) -> Iterator[WorkloadLog]:
    """Every version of the namespace's Workloads from here on."""
    rv = kueue.kube.list(WORKLOADS, namespace=namespace).resource_version
    watched = WorkloadLog(kueue.kube, namespace, rv)
    yield watched
    watched.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"
