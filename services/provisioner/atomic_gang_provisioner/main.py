"""Entry point: ``atomic-gang-provisioner`` runs the controller until SIGTERM.

Settings are read and checked once (``atomic_gang_provisioner.settings``) before
anything starts; an invalid setting exits with status 2 and a message naming the field.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from collections.abc import Callable

from atomic_gang import logs, startup
from atomic_gang.resources import CONFIG_MAPS, CUSTOM_OWNERS, KUEUE
from atomic_gang.settings import SettingsError
from atomic_gang.stopping import hold_stop_signals, wait_for_stop
from atomic_gang_provisioner import kueue_api
from atomic_gang_provisioner.cloud.aws import Ec2Provider, make_clients
from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.httpserver import BoundedServer, ClosedConnections, serve, serve_probes
from atomic_gang_provisioner.kube import (
    KubeClient,
    KubeConfigError,
    KubeError,
    NotFoundError,
    Resource,
)
from atomic_gang_provisioner.manager import Manager
from atomic_gang_provisioner.metrics import ProvisionerMetrics
from atomic_gang_provisioner.metrics_access import ApiserverReviewer, MetricsAccess
from atomic_gang_provisioner.reconcilers.context import CloudHealth, Faults
from atomic_gang_provisioner.settings import PREFIX, ProvisionerSettings
from atomic_gang_provisioner.settings import load as load_settings

log = logging.getLogger("atomic_gang_provisioner")
PROG = "atomic-gang-provisioner"
WARM_UP_RETRY_SECONDS = 5.0
WARM_UP_RETRY_MAX_SECONDS = 60.0
CRASH_AFTER_LAUNCH = "ATOMIC_GANG_FAULT_CRASH_AFTER_LAUNCH"  # e2e only: see Faults


def load(argv: list[str] | None) -> tuple[argparse.Namespace, ProvisionerSettings]:
    p = startup.parser(
        PROG,
        "Kueue AdmissionCheck controller that acquires EC2 gangs N-or-0. Process options "
        f"come from {PREFIX}* env vars (KUBECONFIG, NAMESPACE, HTTP_PORT, HEALTH_PORT, "
        "LOG_LEVEL, ...); controller knobs from the settings file. AWS credentials and "
        "endpoint come from the standard AWS environment (AWS_ENDPOINT_URL for moto).",
    )
    p.add_argument("--identity", default=None, help="leader-election identity (default: host)")
    args = p.parse_args(argv)
    return args, load_settings(args.config)


def _kube_client(server: ServerSettings) -> KubeClient:
    """ATOMIC_GANG_PROVISIONER_KUBECONFIG, then $KUBECONFIG, then in-cluster."""
    try:
        if server.kubeconfig or os.environ.get("KUBECONFIG"):
            return KubeClient.from_kubeconfig(server.kubeconfig or None)
        return KubeClient.in_cluster()
    except KubeConfigError as exc:
        hint = "set ATOMIC_GANG_PROVISIONER_KUBECONFIG, or run in a pod with a ServiceAccount"
        raise SettingsError(f"{exc} ({hint})") from exc


def _check_kueue(client: KubeClient) -> None:
    """Stop at once (exit 2) on a cluster whose Kueue does not serve the API we use. An
    apiserver that does not answer is not a verdict: the informers retry and show it."""
    try:
        served = client.served_versions(KUEUE)
    except KubeError as exc:
        log.warning("could not read Kueue's API discovery", extra={"error": str(exc)})
        return
    why = kueue_api.problem(served)
    if why:
        raise SettingsError(why)


def _served_owners(client: KubeClient) -> tuple[Resource, ...]:
    """The owner kinds beside Jobs (JobSets, TrainJobs) the apiserver serves now: their
    caches run. Without a kind's CRD there is no object of it to serve; one installed
    later is read by a GET."""
    served = []
    for res in CUSTOM_OWNERS:
        try:
            if res.version in client.served_versions(res.group):
                served.append(res)
        except KubeError as exc:
            log.warning(
                "could not read an owner API's discovery",
                extra={"group": res.group, "error": str(exc)},
            )
    return tuple(served)


def _metrics_access(server: ServerSettings, client: KubeClient) -> MetricsAccess | None:
    if server.metrics_auth == "none":
        return None
    return MetricsAccess(ApiserverReviewer(client))


def aws_auth_reader(client: KubeClient) -> Callable[[], str | None]:
    """kube-system/aws-auth's mapRoles (None without that ConfigMap), read when asked:
    the chart's Role allows exactly this one object."""

    def read() -> str | None:
        try:
            found = client.get(CONFIG_MAPS, "aws-auth", namespace="kube-system")
        except NotFoundError:
            return None
        return str((found.get("data") or {}).get("mapRoles", ""))

    return read


def _check_cluster(check: Callable[[], None], health: CloudHealth) -> bool:
    """Resolve the cluster once (the reaper's probe: the verdict shows on the AdmissionCheck)."""
    check()
    if not health.failing("cluster"):
        return True
    log.error(
        "cannot resolve the cluster in EC2/EKS; not Ready until it works"
        " (check AWS_ENDPOINT_URL, the region and the credentials)",
        extra={"error": health.error},
    )
    return False


def _check_until_ok(check: Callable[[], None], health: CloudHealth, done: threading.Event) -> None:
    """Every replica retries (the leader's reaper does too), so a standby turns Ready again."""
    delay = WARM_UP_RETRY_SECONDS
    while not done.wait(delay) and not _check_cluster(check, health):
        delay = min(delay * 2, WARM_UP_RETRY_MAX_SECONDS)


def main(argv: list[str] | None = None) -> None:
    with startup.exit_on_settings_error(PROG):
        args, settings = load(argv)
        server = settings.server
        client = _kube_client(server)
    hold_stop_signals()  # before any thread starts, so every thread inherits the mask
    logs.configure(server.log_level)
    with startup.exit_on_settings_error(PROG):
        _check_kueue(client)
    metrics = ProvisionerMetrics.create()
    manager = Manager(
        settings=settings,
        client=client,
        cloud=_cloud(settings, client, metrics),
        metrics=metrics,
        faults=Faults(crash_after_launch=os.environ.get(CRASH_AFTER_LAUNCH) == "1"),
        owners=_served_owners(client),
    )
    health = manager.ctx.cloud_health

    def ready() -> bool:
        # Not Ready while this replica cannot resolve its cluster in EC2/EKS (a wrong
        # endpoint, region or credentials), so `helm install --wait` fails visibly.
        return manager.synced() and not health.failing("cluster")

    listeners = listen(server, metrics, ready=ready, access=_metrics_access(server, client))
    done = threading.Event()
    # Resolve the cluster now; a cloud error shows on the AdmissionCheck (CloudUnavailable)
    # and keeps this replica not Ready; the reaper (leader) and this replica re-probe.
    check = manager.reaper.check_cluster
    if not _check_cluster(check, health):
        threading.Thread(
            target=_check_until_ok, args=(check, health, done), name="cluster-check", daemon=True
        ).start()
    manager.start(identity=args.identity)
    ports = {name: srv.server_port for name, srv in listeners.items()}
    log.info("running", extra={"cluster": settings.gang.cluster_name, "ports": ports})
    stopped_by = wait_for_stop()
    done.set()
    log.info("shutting down", extra={"signal": stopped_by.name})
    manager.stop()
    for srv in listeners.values():
        srv.shutdown()


def listen(
    server: ServerSettings,
    metrics: ProvisionerMetrics,
    *,
    ready: Callable[[], bool],
    access: MetricsAccess | None,
) -> dict[str, BoundedServer]:
    """The metrics port, and the probes' own port when one is set, each counted in
    ``atomic_gang_http_connections_closed_total`` by its name (``http``, ``probes``)."""
    host = server.http_host
    listeners = {
        "http": serve(
            host=host, port=server.http_port, registry=metrics.registry, ready=ready, access=access
        )
    }
    if server.health_port is not None:
        listeners["probes"] = serve_probes(host=host, port=server.health_port, ready=ready)
    metrics.registry.register(ClosedConnections(listeners))
    return listeners


def _cloud(
    settings: ProvisionerSettings, client: KubeClient, metrics: ProvisionerMetrics
) -> Ec2Provider:
    return Ec2Provider(
        clients=make_clients(region=settings.gang.defaults.region),
        config=settings.engine,
        aws_auth=aws_auth_reader(client),
        on_call=metrics.aws_call,
        on_reservation=metrics.saw_reservation,
    )
