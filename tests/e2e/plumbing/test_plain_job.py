"""Issue 3, acceptance 4: a plain Job runs to completion on a kwok node.

This proves the scheduler, the job controller (KCM) and kwok's stages work.
"""

from __future__ import annotations

import pytest

from tests.e2e.jobs import plain_job
from tests.e2e.kube import Kube, has_condition, wait_for

pytestmark = pytest.mark.e2e


def test_plain_job_completes_on_a_kwok_node(kube: Kube, namespace: str, kwok_node: str) -> None:
    kube.apply(plain_job("plain", namespace, node=kwok_node))

    job = wait_for(
        lambda: (
            (j := kube.get("job", "plain", "-n", namespace)) and has_condition(j, "Complete") and j
        ),
        timeout=60,
        what="job plain Complete",
    )

    assert job["status"]["succeeded"] == 1
    (pod,) = kube.items("pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=plain")
    assert pod["spec"]["nodeName"] == kwok_node
    assert pod["status"]["phase"] == "Succeeded"
