"""etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1.

Flags follow controller-runtime's envtest (apiserver) and kubeadm (KCM and
scheduler each with their own client certificate, KCM controllers with
service-account credentials). ``--endpoint-reconciler-type=none`` because the
``kubernetes`` Service endpoint may not point at a loopback address.
"""

from __future__ import annotations

import shutil
import ssl
from typing import ClassVar

from atomic_gang_devstack import pki, waits
from atomic_gang_devstack.component import Context, ProcessComponent
from atomic_gang_devstack.node.config import NodeNet

SERVICE_CIDR = "10.0.0.0/24"
KCM_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "ttl-after-finished-controller",
    "root-ca-certificate-publisher-controller",
    # Lifts the node.kubernetes.io/not-ready taint the NodeTaint admission plugin
    # puts on every new Node, once kwok reports it Ready (and watches its lease).
    "node-lifecycle-controller",
    # Deployments -> ReplicaSets -> Pods (kwok runs them), and PDB status: what
    # `helm install --wait` of our chart needs (tests/e2e/chart).
    "deployment-controller",
    "replicaset-controller",
    "disruption-controller",
    # What a tenant meets on a real cluster: its DaemonSets make Pods, and the built-in
    # edit/admin/view roles carry the rules aggregated into them (tenants are tested
    # holding only `edit` in their namespace).
    "daemonset-controller",
    "clusterrole-aggregation-controller",
)
# With simulated nodes: a NoExecute taint evicts the pods that do not tolerate it (a
# broken gang node's pods leave at once), and pods bound to a Node that is gone are
# deleted, as on a real cluster; a gang repair relies on both for its Job to restart
# them. Not with the real node: its tier taints that one node NoExecute on purpose, to
# see the kubelet refuse pods, and our own chart's pods run there.
SIM_KCM_CONTROLLERS = ("taint-eviction-controller", "pod-garbage-collector-controller")


class Etcd(ProcessComponent):
    name = "etcd"
    ready_timeout = 30.0

    def prepare(self, ctx: Context) -> None:
        shutil.rmtree(ctx.dir / "etcd", ignore_errors=True)  # every start is a fresh cluster

    def argv(self, ctx: Context) -> list[str]:
        client = f"http://127.0.0.1:{ctx.port('etcd-client')}"
        peer = f"http://127.0.0.1:{ctx.port('etcd-peer')}"
        return [
            str(ctx.bins.path("etcd")),
            "--name=devstack",
            f"--data-dir={ctx.dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=devstack={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def probe(self, ctx: Context) -> bool:
        url = f"http://127.0.0.1:{ctx.port('etcd-client')}/health"
        return waits.http_ok(url, expect='"health":"true"')


# With a real node: EndpointSlices (the apiserver resolves the webhook Service
# through them, --enable-aggregator-routing) and the pods' ServiceAccount tokens.
NODE_KCM_CONTROLLERS = ("endpointslice-controller",)


def _node_ips(ctx: Context) -> tuple[str, ...]:
    """Where pods reach the host: the real node's IP (on lo) and its bridge gateway."""
    if not ctx.options.real_node or ctx.state.node_slot is None:
        return ()
    net = NodeNet(ctx.state.node_slot)
    return (net.node_ip, net.gateway)


class ApiServer(ProcessComponent):
    name = "kube-apiserver"
    needs: ClassVar[tuple[str, ...]] = ("etcd",)
    ready_timeout = 90.0
    _tls: ssl.SSLContext | None = None

    def __init__(self, *, real_node: bool = False) -> None:
        if real_node:  # its certificate names the node's addresses
            self.needs = ("etcd", "node-host")  # type: ignore[misc]

    def prepare(self, ctx: Context) -> None:
        hosts = (
            *_node_ips(ctx),
            "127.0.0.1",
            "localhost",
            "10.0.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
        ctx.serving_cert("apiserver", hosts)
        key, pub = pki.service_account_keys()
        (ctx.pki_dir / "sa.key").write_bytes(key)
        (ctx.pki_dir / "sa.pub").write_bytes(pub)
        ctx.client_kubeconfig("admin", "atomic-gang-admin", orgs=("system:masters",))
        # A front-proxy CA fills extension-apiserver-authentication's requestheader
        # bundle; without it KCM and the scheduler log an error every few ms.
        proxy_ca = pki.new_ca("atomic-gang-front-proxy-ca")
        proxy_ca.write(ctx.pki_dir, "front-proxy-ca")
        pki.issue(proxy_ca, "front-proxy-client", client=True).write(
            ctx.pki_dir, "front-proxy-client"
        )

    def argv(self, ctx: Context) -> list[str]:
        d = ctx.pki_dir
        return [
            str(ctx.bins.path("kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{ctx.port('etcd-client')}",
            # With a real node, pods reach the apiserver at the node IP (no kube-proxy).
            f"--bind-address={'0.0.0.0' if ctx.options.real_node else '127.0.0.1'}",  # noqa: S104
            "--advertise-address=127.0.0.1",
            f"--secure-port={ctx.port('apiserver')}",
            f"--cert-dir={ctx.dir / 'apiserver'}",
            f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={ctx.ca_file}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={ctx.apiserver_url}",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            f"--requestheader-client-ca-file={d / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={d / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={d / 'front-proxy-client.key'}",
            *self._node_flags(ctx),
        ]

    @staticmethod
    def _node_flags(ctx: Context) -> list[str]:
        if not ctx.options.real_node:
            return []
        return [
            # logs/exec: there is no DNS for the node's Hostname address.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            # Webhook Services resolve to a ready endpoint's pod IP.
            "--enable-aggregator-routing=true",
        ]

    def probe(self, ctx: Context) -> bool:
        if self._tls is None:
            admin = (ctx.pki_dir / "client-admin.crt", ctx.pki_dir / "client-admin.key")
            self._tls = waits.tls_context(ctx.ca_file, admin)
        return waits.http_ok(f"{ctx.apiserver_url}/readyz", verify=self._tls)


class _KubeController(ProcessComponent):
    """Shared shape of KCM and scheduler: own identity, own serving cert, /healthz."""

    needs = ("kube-apiserver",)
    user = ""
    _tls: ssl.SSLContext | None = None

    def prepare(self, ctx: Context) -> None:
        ctx.client_kubeconfig(self.name, self.user)
        ctx.serving_cert(self.name)

    def common_flags(self, ctx: Context) -> list[str]:
        kc = ctx.dir / "kubeconfigs" / f"{self.name}.yaml"
        return [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={ctx.port(self.name)}",
            f"--tls-cert-file={ctx.pki_dir / (self.name + '.crt')}",
            f"--tls-private-key-file={ctx.pki_dir / (self.name + '.key')}",
        ]

    @staticmethod
    def rate_flags(ctx: Context) -> list[str]:
        """The client rate asked for (bench.scale at 800 pods); none keeps upstream's."""
        qps = ctx.options.control_plane_qps
        return [f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"] if qps else []

    def probe(self, ctx: Context) -> bool:
        if self._tls is None:
            self._tls = waits.tls_context(ctx.ca_file)
        return waits.http_ok(f"https://127.0.0.1:{ctx.port(self.name)}/healthz", verify=self._tls)


class ControllerManager(_KubeController):
    name = "kube-controller-manager"
    user = "system:kube-controller-manager"

    @staticmethod
    def controllers(ctx: Context) -> tuple[str, ...]:
        extra = NODE_KCM_CONTROLLERS if ctx.options.real_node else SIM_KCM_CONTROLLERS
        return KCM_CONTROLLERS + extra

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("kube-controller-manager")),
            *self.common_flags(ctx),
            f"--controllers={','.join(self.controllers(ctx))}",
            "--use-service-account-credentials=true",
            f"--root-ca-file={ctx.ca_file}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            *self.rate_flags(ctx),
        ]


class Scheduler(_KubeController):
    name = "kube-scheduler"
    user = "system:kube-scheduler"

    def argv(self, ctx: Context) -> list[str]:
        return [
            str(ctx.bins.path("kube-scheduler")),
            *self.common_flags(ctx),
            *self.rate_flags(ctx),
        ]
