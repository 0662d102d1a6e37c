"""Issue 13 acceptance on the real local stack, as a user runs kubectl.

The stack runs our webhook with the dev settings (``allowedAmiIds`` set) and the
chart's gang node ValidatingAdmissionPolicy, rendered by helm and applied by the
dev stack (``components/policy.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_devstack import dev_objects as dev
from tests.e2e.jobs import gang_job
from tests.e2e.kube import Kube

pytestmark = pytest.mark.e2e
POLICY_DENIAL = "gang nodes belong to their gang"


def _absent(kube: Kube, kind: str, name: str, namespace: str) -> bool:
    return kube.run("get", kind, name, "-n", namespace, check=False).returncode != 0


def test_gang_job_without_the_queue_label_is_denied_naming_it(kube: Kube, namespace: str) -> None:
    done = kube.apply(gang_job("unqueued", namespace, queue=None), check=False)

    assert done.returncode != 0
    assert f"metadata.labels[{keys.QUEUE_NAME_LABEL}]" in done.stderr
    assert "[NotQueued]" in done.stderr
    assert _absent(kube, "job", "unqueued", namespace)


def test_ami_outside_allowed_ami_ids_is_denied(kube: Kube, namespace: str) -> None:
    allowed = dev.DEV_SETTINGS["allowedAmiIds"]
    job = gang_job("own-image", namespace, annotations={keys.AMI_ID: "ami-0fffffffffffffff0"})
    done = kube.apply(job, check=False)

    assert done.returncode != 0
    assert "[AmiNotAllowed]" in done.stderr
    assert "the cluster admin's (allowedAmiIds)" in done.stderr
    assert not [ami for ami in allowed if ami.rstrip("*") in done.stderr]  # never the list
    assert _absent(kube, "job", "own-image", namespace)
    ok = gang_job("allowed-image", namespace, annotations={keys.AMI_ID: allowed[0]})
    assert kube.apply(ok).returncode == 0


def test_a_gang_that_may_pack_its_pods_is_admitted_with_a_warning(
    kube: Kube, namespace: str
) -> None:
    done = kube.apply(gang_job("packed", namespace))

    assert "job.batch/packed created" in done.stdout
    assert "Warning: atomic-gang: the 2 gang pods may share nodes" in done.stderr


def _squatter(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]} | spec,
    }


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"tolerations": [{"key": keys.GANG_TAINT, "operator": "Exists"}]}, id="tol"),
        pytest.param({"nodeSelector": {keys.POOL: "e2e-pool"}}, id="selector"),
    ],
)
def test_a_plain_pod_reaching_for_gang_nodes_is_denied_by_the_policy(
    kube: Kube, namespace: str, spec: dict[str, Any]
) -> None:
    done = kube.apply(_squatter("squatter", namespace, **spec), check=False)

    assert done.returncode != 0
    assert "ValidatingAdmissionPolicy" in done.stderr
    assert POLICY_DENIAL in done.stderr
    assert _absent(kube, "pod", "squatter", namespace)


def test_a_plain_job_reaching_for_gang_nodes_is_denied_by_the_webhook(
    kube: Kube, namespace: str
) -> None:
    job = gang_job("sneaky", namespace)
    job["metadata"]["labels"] = {}
    job["metadata"]["annotations"] = {}
    job["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    done = kube.apply(job, check=False)

    assert done.returncode != 0
    # Our webhook's 422 Status, as kubectl prints it (field and reason of the cause).
    assert 'The jobs "sneaky" is invalid: spec.template.spec.tolerations[0]' in done.stderr
    assert "[ReservedToleration]" in done.stderr
