"""kwok: fake kubelets for nodes annotated ``kwok.x-k8s.io/node=fake``.

Stages come from kwok's module source (with more of them in flight than kwok's
defaults, see PARALLELISM): nodes become Ready (and keep a lease),
pods become Running+Ready, Job-owned pods then Succeed, and deleted pods are
removed. ``KWOK_WORKDIR`` points into the state directory so no
``~/.kwok/kwok.yaml`` of the user leaks in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from atomic_gang_devstack import waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent

NODE_ANNOTATION = "kwok.x-k8s.io/node"
GENERAL_LABEL = "devstack.atomic-gang.k8s.aws/general"
STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    # general: honours the pod-complete.stage.kwok.x-k8s.io/delay annotation, so a test
    # can keep a gang Job running (default: done after 1s plus up to 5s jitter)
    "pod/general/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)
# Each real kubelet works on its own node; kwok's defaults (4 node and 4 pod stages at
# a time) made it the bottleneck at bench.scale's 800 nodes: it saw a Node at once and
# patched it Ready seconds later (docs/benchmarks.md#reading-the-wall).
PARALLELISM = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: 32
  podPlayStageParallelism: 32
  nodeLeaseParallelism: 16
  podsOnNodeSyncParallelism: 4
"""


def fake_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node object that our kwok manages (it turns it Ready)."""
    res = dict(
        allocatable or {"cpu": "32", "memory": "256Gi", "ephemeral-storage": "500Gi", "pods": "110"}
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": {"taints": taints or []},
        "status": {"allocatable": res, "capacity": res},
    }


class Kwok(ProcessComponent):
    name = "kwok"
    needs = ("kube-apiserver",)
    ready_timeout = 30.0

    def prepare(self, ctx: Context) -> None:
        root = ctx.bins.source("kwok") / "kustomize" / "stage"
        docs = [PARALLELISM.strip()] + [
            (root / s).read_text(encoding="utf-8").strip() for s in STAGES
        ]
        (ctx.dir / "kwok").mkdir(parents=True, exist_ok=True)
        (ctx.dir / "kwok" / "stages.yaml").write_text("\n---\n".join(docs) + "\n", encoding="utf-8")
        ctx.client_kubeconfig("kwok", "kwok-controller", orgs=("system:masters",))

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("kwok")),
            f"--config={ctx.dir / 'kwok' / 'stages.yaml'}",
            f"--kubeconfig={ctx.dir / 'kubeconfigs' / 'kwok.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
            "--cidr=10.244.0.0/16",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{ctx.port('kwok')}",
        ]

    def env(self, ctx: Context) -> Mapping[str, str]:
        return {**os.environ, "KWOK_WORKDIR": str(ctx.dir / "kwok")}

    def probe(self, ctx: Context) -> bool:
        return waits.http_ok(f"http://127.0.0.1:{ctx.port('kwok')}/healthz")


class FakeNodes(Component):
    """``options.fake_nodes`` general-purpose kwok nodes, waited on until Ready."""

    name = "fake-nodes"
    needs = ("kwok",)

    def start(self, ctx: Context) -> None:
        labels = {GENERAL_LABEL: "true"}
        nodes = [fake_node(f"kwok-node-{i}", labels=labels) for i in range(ctx.options.fake_nodes)]
        ctx.kubectl.apply(nodes)

    def wait_ready(self, ctx: Context) -> None:
        if ctx.options.fake_nodes:
            ctx.kubectl.run(
                "wait", "--for=condition=Ready", "--timeout=60s", "node", "-l", GENERAL_LABEL
            )
