"""One complete stack for the system tests (what ``make dev-up`` runs), in a state
dir of its own so it never meets the instances and Nodes of other e2e packages.

It also writes the ``aws.env`` file ``make dev-up`` writes to ``.dev/``. The
provisioner settings shorten the waits the scenarios exercise: a 20 s join
deadline, a 3 s health grace, fast shortfall retries that never turn into Retry.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from atomic_gang_devstack.state import StackOptions
from tests.e2e.kube import queued_namespace
from tests.e2e.system.harness import System, running

HEALTH_GRACE_SECONDS = 3
SETTINGS = {
    "joinDeadlineSeconds": 20,
    "healthGraceSeconds": HEALTH_GRACE_SECONDS,
    "acquireAttemptsBeforeRetry": 1000,
    "acquireRetry": {"backoffBaseSeconds": 0.5, "backoffMaxSeconds": 2.0},
    # A failed GPU breaks its node after 1 s; more than one broken node at once is past
    # what a repair takes here (test_repair.py).
    "nodeHealth": {
        "conditions": [{"type": "AcceleratedHardwareReady", "status": "False", "graceSeconds": 1}]
    },
    "repair": {"maxNodes": 1, "deadlineSeconds": 60},
}


@pytest.fixture(scope="package")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    state_dir = tmp_path_factory.mktemp("system-stack")
    options = StackOptions(
        state_dir=state_dir,
        aws_env_out=state_dir / "aws.env",  # what make dev-up writes to .dev/aws.env
        detach=False,
        check_stand_in=False,
        fake_nodes=1,  # a general node the gang's pods must never use
        cloud=True,
        provisioners=2,
        nodesim=True,
        boot_delay=1.0,
        boot_jitter=1.0,
        provisioner_settings=SETTINGS,
    )
    with running(options) as sys_:
        yield sys_


@pytest.fixture
def namespace(system: System, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace with the LocalQueue ``atomic-gang-queue``."""
    # Short enough that a pool's name, ``<namespace>.<label>``, stays within 63 characters.
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:24].rstrip("-")
    name = f"sys-{slug}-{uuid.uuid4().hex[:6]}"
    queued_namespace(system.kubectl, name)
    yield name
    system.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def replicas_back(system: System) -> Iterator[System]:
    """Whatever a test killed is running again afterwards, for the next test."""
    yield system
    system.revive()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"
