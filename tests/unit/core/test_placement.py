"""One pod per node: what counts as keeping a gang's pods apart."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import placement
from tests.support.jobs import gang_job

NAME = {"batch.kubernetes.io/job-name": "allreduce-pretrain"}


def _anti(selector: dict[str, Any] | None, key: str = "kubernetes.io/hostname", **t: Any) -> Any:
    term = {"topologyKey": key, **t}
    if selector is not None:
        term["labelSelector"] = selector
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def _spread(skew: int = 1, when: str = "DoNotSchedule") -> dict[str, Any]:
    c = {
        "maxSkew": skew,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": NAME},
    }
    return {"topologySpreadConstraints": [c]}


def _gpu(resource: str, qty: str = "8") -> dict[str, Any]:
    return {"containers": [{"name": "t", "image": "t", "resources": {"limits": {resource: qty}}}]}


@pytest.mark.parametrize(
    ("pod", "spreads"),
    [
        pytest.param({}, False, id="nothing"),
        pytest.param(_anti({"matchLabels": NAME}), True, id="anti-job-name"),
        pytest.param(_anti({"matchLabels": {"job-name": "allreduce-pretrain"}}), True, id="legacy"),
        pytest.param(_anti({}), True, id="anti-everything"),
        pytest.param(_anti(None), False, id="anti-null-selector"),
        pytest.param(_anti({"matchLabels": {"job-name": "other"}}), False, id="anti-other-job"),
        pytest.param(
            _anti({"matchLabels": NAME}, key="topology.kubernetes.io/zone"), False, id="zone"
        ),
        pytest.param(_anti({"matchLabels": NAME}, namespaces=["other"]), False, id="other-ns"),
        pytest.param(
            _anti({"matchExpressions": [{"key": "app", "operator": "In", "values": ["train"]}]}),
            True,
            id="template-label",
        ),
        pytest.param(_spread(), True, id="spread"),
        pytest.param(_spread(skew=2), False, id="spread-skew-2"),
        pytest.param(_spread(when="ScheduleAnyway"), False, id="spread-soft"),
        pytest.param(_gpu("nvidia.com/gpu"), True, id="gpu"),
        pytest.param(_gpu("aws.amazon.com/neuron"), True, id="neuron"),
        pytest.param(_gpu("vpc.amazonaws.com/efa", "4"), True, id="efa"),
        pytest.param(_gpu("nvidia.com/gpu", "0"), False, id="zero-gpu"),
        pytest.param(_gpu("cpu", "96"), False, id="cpu"),
        pytest.param(_gpu("hugepages-2Mi", "1Gi"), False, id="hugepages"),
    ],
)
def test_one_pod_per_node(pod: dict[str, Any], spreads: bool) -> None:
    job = gang_job()
    job["spec"]["template"]["metadata"] = {"labels": {"app": "train"}}
    job["spec"]["template"]["spec"].update(pod)
    spec = job["spec"]
    assert placement.one_pod_per_node(job, spec, spec["template"]["spec"]) is spreads


def test_warning_fits_one_kubectl_line() -> None:
    assert len(placement.WARNING.format(n=64)) <= 256
