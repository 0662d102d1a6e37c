"""Two tenants on one stack, each holding only the built-in ``edit`` role in its own
namespace (a ServiceAccount token kubeconfig each: what a multi-tenant cluster hands
its teams), against the complete product: control plane with the DaemonSet and
ClusterRole-aggregation controllers, Kueue, moto + layer, webhook, the gang-node
policy, one provisioner, the node-join simulator.

The provisioner reserves pool names ``a-only-*`` for tenant A (``poolNamespaces``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from atomic_gang_devstack.state import StackOptions
from tests.e2e.kube import Kube, queued_namespace
from tests.e2e.system.harness import System, running
from tests.support.wait import wait_for

TEAM_A, TEAM_B = "tenant-a", "tenant-b"
RESERVED = "a-only-*"  # pool names reserved for tenant A (not its namespace name: B may say them)
SETTINGS = {
    "joinDeadlineSeconds": 60,
    "healthGraceSeconds": 3,
    "acquireAttemptsBeforeRetry": 1000,
    "acquireRetry": {"backoffBaseSeconds": 0.5, "backoffMaxSeconds": 2.0},
    "poolNamespaces": [{"names": RESERVED, "namespaces": [TEAM_A]}],
}


@dataclass(frozen=True)
class Tenants:
    system: System
    a: Kube  # tenant A's kubectl: `edit` in tenant-a, nothing else
    b: Kube


def _tenant(system: System, namespace: str, tmp: Path) -> Kube:
    admin = system.kubectl
    queued_namespace(admin, namespace)
    admin.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "dev", "namespace": namespace},
        }
    )
    rbac = "rbac.authorization.k8s.io"
    admin.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "dev-edit", "namespace": namespace},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "ServiceAccount", "name": "dev", "namespace": namespace}],
        }
    )
    token = admin.run("create", "token", "dev", "-n", namespace, "--duration=2h").stdout.strip()
    ctx = system.ctx
    kubeconfig = tmp / f"{namespace}.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "dev",
                        "cluster": {
                            "server": ctx.apiserver_url,
                            "certificate-authority": str(ctx.ca_file),
                        },
                    }
                ],
                "users": [{"name": namespace, "user": {"token": token}}],
                "contexts": [
                    {
                        "name": namespace,
                        "context": {"cluster": "dev", "user": namespace, "namespace": namespace},
                    }
                ],
                "current-context": namespace,
            }
        )
    )
    tenant = Kube(admin.kubectl, kubeconfig, tmp / f"{namespace}-cache")
    # The aggregated `edit` role takes a moment to carry its rules.
    wait_for(
        lambda: tenant.run("auth", "can-i", "create", "jobs", check=False).stdout.strip() == "yes",
        timeout=30,
        what=f"{namespace}'s edit role aggregated",
    )
    return tenant


@pytest.fixture(scope="package")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    state_dir = tmp_path_factory.mktemp("tenancy-stack")
    options = StackOptions(
        state_dir=state_dir,
        detach=False,
        check_stand_in=False,
        fake_nodes=1,
        cloud=True,
        provisioners=1,
        nodesim=True,
        boot_delay=0.5,
        boot_jitter=0.5,
        provisioner_settings=SETTINGS,
    )
    with running(options) as system:
        yield Tenants(
            system, _tenant(system, TEAM_A, state_dir), _tenant(system, TEAM_B, state_dir)
        )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"
