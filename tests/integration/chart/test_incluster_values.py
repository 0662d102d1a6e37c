"""The values ``make cluster-up`` installs the chart with render and pass the schema.

They are built by ``atomic_gang_devstack.components.incluster.chart_values`` from the
stack's state (node slot, imported images, ports); this renders them offline, so a
schema change that would break ``make cluster-up`` fails in the fast tier.
"""

from __future__ import annotations

import json
from pathlib import Path

from atomic_gang_devstack import bins
from atomic_gang_devstack.component import Context
from atomic_gang_devstack.components.incluster import chart_values
from atomic_gang_devstack.components.node import IMAGES_FILE
from atomic_gang_devstack.node.config import SYSTEM_LABEL, SYSTEM_TAINT_KEY
from atomic_gang_devstack.state import StackOptions, StackState
from tests.integration.chart.render import render

REF = "localhost/atomic-gang-provisioner:dev-0123456789abcdef"


def _ctx(tmp_path: Path) -> Context:
    options = StackOptions(state_dir=tmp_path, real_node=True, in_cluster=True)
    state = StackState(options=options, node_slot=4, ports={"apiserver": 16443, "fakeaws": 15000})
    (tmp_path / "node").mkdir()
    images = {
        k: {"ref": r, "image_id": "sha256:00", "archive": "/x.tar"}
        for k, r in (("controller", REF), ("webhook", REF.replace(":", "-webhook:", 1)))
    }
    (tmp_path / "node" / IMAGES_FILE).write_text(json.dumps(images))
    return Context(options=options, state=state, bins=bins.Bins.load())


def test_cluster_up_values_render_both_services_onto_the_real_node(
    helm: Path, tmp_path: Path
) -> None:
    values = chart_values(_ctx(tmp_path))

    rendered = render(helm, values)

    assert rendered.returncode == 0, rendered.stderr
    assert "devUrl" not in values["webhook"]  # the apiserver calls the Service
    for suffix, image in (("-controller", REF), ("-webhook", REF.replace(":", "-webhook:", 1))):
        pod = rendered.one("Deployment", suffix)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"] == image
        assert container["imagePullPolicy"] == "IfNotPresent"
        assert pod["nodeSelector"] == {SYSTEM_LABEL: "true"}
        assert [t["key"] for t in pod["tolerations"]] == [SYSTEM_TAINT_KEY]
    ctl = rendered.one("Deployment", "-controller")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in ctl["env"]}
    assert env["KUBERNETES_SERVICE_HOST"] == "10.87.4.2"  # the node IP: no kube-proxy here
    assert env["KUBERNETES_SERVICE_PORT"] == "16443"
    assert env["AWS_ENDPOINT_URL"] == "http://10.87.4.2:15000"
    assert ctl["envFrom"] == [{"secretRef": {"name": "atomic-gang-aws"}}]
