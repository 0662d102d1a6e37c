"""Issue 3, acceptance 1 and 2: our webhook decides at admission, and fails closed."""

from __future__ import annotations

import pytest

from atomic_gang import keys
from atomic_gang_devstack import dev_objects as dev
from atomic_gang_devstack.components.webhook import GangWebhook
from tests.e2e.conftest import LocalStack
from tests.e2e.jobs import gang_job
from tests.e2e.kube import Kube

pytestmark = pytest.mark.e2e

BAD_ANNOTATIONS = {
    keys.COUNT: "two",
    keys.INSTANCE_TYPE: "x9.mega",
    keys.MODE: "sometimes",
    keys.KEEP_WARM_TTL: "forever",
    keys.MAX_LIFETIME: "-5m",
}


def test_bad_gang_job_is_rejected_naming_every_bad_annotation(kube: Kube, namespace: str) -> None:
    done = kube.apply(gang_job("bad", namespace, annotations=BAD_ANNOTATIONS), check=False)

    assert done.returncode != 0
    missing = [key for key in BAD_ANNOTATIONS if key not in done.stderr]
    assert not missing, f"stderr does not name {missing}:\n{done.stderr}"
    assert kube.run("get", "job", "bad", "-n", namespace, check=False).returncode != 0


def test_valid_gang_job_is_accepted(kube: Kube, namespace: str) -> None:
    done = kube.apply(gang_job("good", namespace))

    assert "job.batch/good created" in done.stdout
    job = kube.get("job", "good", "-n", namespace)
    assert job["metadata"]["annotations"][keys.COUNT] == "2"


def test_gang_job_is_refused_while_our_webhook_is_down(
    local_stack: LocalStack, kube: Kube, namespace: str
) -> None:
    local_stack.stack.stop_component(GangWebhook.name)
    try:
        done = kube.apply(gang_job("while-down", namespace), check=False)
    finally:
        local_stack.stack.start_component(GangWebhook.name)

    assert done.returncode != 0
    assert f'failed calling webhook "{dev.WEBHOOK_NAME}"' in done.stderr
    assert kube.run("get", "job", "while-down", "-n", namespace, check=False).returncode != 0
    # Back up: the same Job is now admitted.
    assert kube.apply(gang_job("while-down", namespace)).returncode == 0
