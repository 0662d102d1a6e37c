"""One real node beside the kwok ones: containerd 2.x + runc + CNI bridge, and a kubelet.

``NodeHost`` claims the host resources (slot, address on lo, cgroup roots,
saved sysctls) first and undoes all of it last. ``Containerd`` runs with a root,
state and sockets of its own; ``NodeImages`` imports the pause image and our two
images (built by ``images.py``) into its ``k8s.io`` namespace; ``Kubelet``
registers the node with a taint only our system pods tolerate, so gang Job
pods keep landing on the simulated EC2 nodes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import ClassVar

import yaml

from atomic_gang_devstack import waits
from atomic_gang_devstack.component import Component, Context, ProcessComponent
from atomic_gang_devstack.images import Built, Images
from atomic_gang_devstack.node import host
from atomic_gang_devstack.node.config import (
    SYSTEM_LABEL,
    NodeNet,
    containerd_config,
    kubelet_config,
    write_cni,
)

log = logging.getLogger("atomic_gang_devstack")
NODE_NAME = "atomic-gang-node"
NODE_RBAC = "atomic-gang-devstack:nodes"
IMAGES_FILE = "images.json"


def node_net(ctx: Context) -> NodeNet:
    if ctx.state.node_slot is None:
        raise RuntimeError("no node slot claimed (the node-host component did not run)")
    return NodeNet(ctx.state.node_slot)


def node_tree(ctx: Context) -> Path:
    return ctx.dir / "node"


def node_images(ctx: Context) -> dict[str, Built]:
    """The images imported into the node (written by NodeImages)."""
    raw = json.loads((node_tree(ctx) / IMAGES_FILE).read_text())
    return {
        k: Built(ref=v["ref"], image_id=v["image_id"], archive=Path(v["archive"]))
        for k, v in raw.items()
    }


class NodeHost(Component):
    name = "node-host"

    def start(self, ctx: Context) -> None:
        net = host.claim(node_tree(ctx))
        with ctx.lock:
            ctx.state.node_slot = net.slot
            ctx.state.save()
        node_tree(ctx).mkdir(parents=True, exist_ok=True)
        log.info(
            "node slot %d: node IP %s, pods %s on %s", net.slot, net.node_ip, net.subnet, net.bridge
        )

    def stop(self, ctx: Context) -> None:
        if ctx.state.node_slot is None:
            return
        problems = host.release(node_net(ctx), node_tree(ctx))
        for problem in problems:
            log.warning("node teardown: %s", problem)
        with ctx.lock:
            ctx.state.node_slot = None
            ctx.state.save()

    def healthy(self, ctx: Context) -> bool:
        return ctx.state.node_slot is not None and node_net(ctx).node_ip in host.lo_addresses()


class Containerd(ProcessComponent):
    name = "containerd"
    needs = ("node-host",)
    ready_timeout = 60.0

    def prepare(self, ctx: Context) -> None:
        net, tree = node_net(ctx), node_tree(ctx)
        net.run_dir.mkdir(parents=True, exist_ok=True)
        pause = Images(ctx.bins).pause()
        (tree / "containerd").mkdir(parents=True, exist_ok=True)
        config = containerd_config(tree, net, pause_image=pause.ref)
        (tree / "containerd" / "config.toml").write_text(config, encoding="utf-8")
        write_cni(tree, net)

    def env(self, ctx: Context) -> dict[str, str]:
        """containerd finds its shim by name on PATH; ours is cached under a versioned name."""
        shims = node_tree(ctx) / "bin"
        shims.mkdir(parents=True, exist_ok=True)
        link = shims / "containerd-shim-runc-v2"
        link.unlink(missing_ok=True)
        link.symlink_to(ctx.bins.path("containerd-shim-runc-v2"))
        return {**os.environ, "PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}"}

    def argv(self, ctx: Context) -> list[str]:
        config = node_tree(ctx) / "containerd" / "config.toml"
        return [str(ctx.bins.path("containerd")), "--config", str(config), "--log-level", "warn"]

    def ctr(self, ctx: Context, *args: str) -> subprocess.CompletedProcess[str]:
        sock = str(node_net(ctx).containerd_socket)
        argv = [str(ctx.bins.path("ctr")), "--address", sock, "--namespace", "k8s.io", *args]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)

    def probe(self, ctx: Context) -> bool:
        return node_net(ctx).containerd_socket.exists() and self.ctr(ctx, "version").returncode == 0


class NodeImages(Component):
    """pause + our two images, built or reused, imported into the node's containerd."""

    name = "node-images"
    needs = ("containerd",)

    def start(self, ctx: Context) -> None:
        built = Images(ctx.bins).all()
        runtime = Containerd()
        for image in built.values():
            done = runtime.ctr(ctx, "images", "import", "--local", str(image.archive))
            if done.returncode != 0:
                done = runtime.ctr(ctx, "images", "import", str(image.archive))
            if done.returncode != 0:
                raise waits.ComponentFailedError(
                    self.name, f"ctr import {image.ref}: {done.stderr}"
                )
        record = {
            k: {"ref": b.ref, "image_id": b.image_id, "archive": str(b.archive)}
            for k, b in built.items()
        }
        (node_tree(ctx) / IMAGES_FILE).write_text(json.dumps(record, indent=2))

    def healthy(self, ctx: Context) -> bool:
        return (node_tree(ctx) / IMAGES_FILE).exists()


class Kubelet(ProcessComponent):
    name = "kubelet"
    needs: ClassVar[tuple[str, ...]] = ("kube-apiserver", "node-images")
    ready_timeout = 90.0

    def prepare(self, ctx: Context) -> None:
        net, tree = node_net(ctx), node_tree(ctx)
        ctx.client_kubeconfig("kubelet", f"system:node:{NODE_NAME}", orgs=("system:nodes",))
        ctx.kubectl.apply([_node_binding()])
        cfg = kubelet_config(
            tree, net, port=ctx.port("kubelet"), healthz_port=ctx.port("kubelet-healthz")
        )
        (tree / "kubelet.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")

    def argv(self, ctx: Context) -> list[str]:
        net, tree = node_net(ctx), node_tree(ctx)
        return [
            str(ctx.bins.path("kubelet")),
            f"--config={tree / 'kubelet.yaml'}",
            f"--kubeconfig={ctx.dir / 'kubeconfigs' / 'kubelet.yaml'}",
            f"--root-dir={tree / 'kubelet'}",
            f"--cert-dir={tree / 'kubelet-pki'}",
            f"--node-ip={net.node_ip}",
            f"--hostname-override={NODE_NAME}",
            f"--node-labels={SYSTEM_LABEL}=true",
            "--v=1",
        ]

    def probe(self, ctx: Context) -> bool:
        if not waits.http_ok(f"http://127.0.0.1:{ctx.port('kubelet-healthz')}/healthz"):
            return False
        done = ctx.kubectl.run("get", "node", NODE_NAME, "-o", "json", check=False)
        if done.returncode != 0:
            return False
        conds = json.loads(done.stdout).get("status", {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)

    def stop(self, ctx: Context) -> None:
        """Pods go through the API first, so kubelet runs CNI DEL and unmounts volumes."""
        kubectl = ctx.kubectl
        if kubectl.run("get", "node", NODE_NAME, check=False).returncode != 0:
            return
        kubectl.run("cordon", NODE_NAME, check=False)  # no replacement pods land here
        on_node = ("--all-namespaces", f"--field-selector=spec.nodeName={NODE_NAME}")
        done = kubectl.run("delete", "pods", *on_node, "--wait", "--timeout=60s", check=False)
        if done.returncode != 0:
            log.warning("kubelet: pods did not go in 60 s; forcing: %s", done.stderr.strip())
            kubectl.run("delete", "pods", *on_node, "--force", "--grace-period=0", check=False)
        kubectl.run("delete", "node", NODE_NAME, "--wait=false", check=False)
        kubectl.run("delete", "clusterrolebinding", NODE_RBAC, "--ignore-not-found", check=False)


def _node_binding() -> dict[str, object]:
    """The built-in ``system:node`` binding has no subjects: bind the nodes group to it."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": NODE_RBAC},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:node",
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}
        ],
    }
