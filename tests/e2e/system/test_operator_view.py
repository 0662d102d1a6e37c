"""What an operator looks at, on the whole stack: ``atomic-gang explain`` as a read-only
user at each stage of a gang (quota, capacity shortfall n/K, admitted, done), the cost
metric after a gang ran, and ``promtool check metrics`` over both services' /metrics."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomic_gang_devstack.bins import Bins
from atomic_gang_devstack.components.webhook import GangWebhook
from tests.e2e.kube import Kube
from tests.e2e.names import gnp
from tests.e2e.system.conftest import SETTINGS, unique
from tests.e2e.system.harness import System, sample_job
from tests.support.scrape import Scrape
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e
ZONE, TYPE = "us-east-1b", "p4d.24xlarge"
USER = "gang-explainer"
# docs/operations.md, "Why is my Job pending?": all that explain needs.
READ_ONLY: list[dict[str, Any]] = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["admissionchecks"], "verbs": ["get"]},
    {"apiGroups": ["atomic-gang.k8s.aws"], "resources": ["gangnodepools"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
]


@pytest.fixture(scope="module")
def reader(system: System) -> Path:
    """A kubeconfig of a user who may only read what explain reads."""
    rbac = "rbac.authorization.k8s.io"
    system.kubectl.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": USER},
            "rules": READ_ONLY,
        }
    )
    system.kubectl.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": USER},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": USER},
            "subjects": [{"kind": "User", "name": USER, "apiGroup": rbac}],
        }
    )
    kubeconfig = system.ctx.client_kubeconfig(USER, USER)
    as_reader = Kube(system.kubectl.kubectl, kubeconfig, system.kubectl.cache_dir)
    for verb, resource in (("get", "jobs"), ("create", "jobs"), ("patch", "gangnodepools")):
        done = as_reader.run("auth", "can-i", verb, resource, check=False)
        assert done.stdout.strip() == ("yes" if verb == "get" else "no"), (verb, resource)
    return kubeconfig


def explain(kubeconfig: Path, namespace: str, job: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "atomic_gang_cli",
            "explain",
            "--kubeconfig",
            str(kubeconfig),
            f"{namespace}/{job}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def says(kubeconfig: Path, namespace: str, job: str, verdict: str) -> str | None:
    code, out, err = explain(kubeconfig, namespace, job)
    assert code == 0, err
    return out if verdict in out else None


def test_explain_follows_a_gang_from_shortfall_to_done(
    system: System, namespace: str, reader: Path
) -> None:
    label = unique("explain")
    system.fake.set_capacity(ZONE, TYPE, 3)  # a 4-gang does not fit
    try:
        system.world.submit(
            sample_job(
                "explained", namespace, pool=label, availability_zones=ZONE, keep_warm_ttl="2s"
            )
        )
        out = wait_for(
            lambda: says(reader, namespace, "explained", "Waiting for: capacity shortfall"),
            timeout=60,
            what="explain: capacity shortfall",
        )
        k = SETTINGS["acquireAttemptsBeforeRetry"]
        assert re.search(rf"Waiting for: capacity shortfall \d+/{k}\n", out), out
        assert "InsufficientCapacity" in out
        # The header names the Job's pool label as the user wrote it.
        assert f"Job {namespace}/explained: gang 4×{TYPE}, pool {label}" in out
        for line in ("Job          created", "QuotaReserved=True", "CapacityShortfall=True"):
            assert line in out, out
        assert "could not read" not in out  # the read-only role is enough
        assert out.count("InsufficientCapacity ×") == 1, out  # repeats folded into one line

        system.fake.set_capacity(ZONE, TYPE, 4)
        wait_for(
            lambda: says(reader, namespace, "explained", "Not waiting: the Job is Complete"),
            timeout=120,
            what="explain: the Job is Complete",
        )
    finally:
        system.fake.set_capacity(ZONE, TYPE, None)


def test_explain_names_quota(system: System, namespace: str, reader: Path) -> None:
    job = sample_job("too-big", namespace, pool=unique("quota"))
    [container] = job["spec"]["template"]["spec"]["containers"]
    container["resources"]["requests"] = {
        **container["resources"].get("requests", {}),
        "cpu": "300",
    }
    system.world.submit(job)  # 4 × 300 CPUs > the ClusterQueue's 1000
    out = wait_for(
        lambda: says(reader, namespace, "too-big", "Waiting for: quota"),
        timeout=60,
        what="explain: quota",
    )
    assert "cpu" in out.split("Waiting for: quota", 1)[1]


def test_explain_without_the_job_or_the_cluster(system: System, reader: Path) -> None:
    code, _, err = explain(reader, "default", "no-such-job")
    assert (code, err.strip()) == (1, "atomic-gang explain: no Job default/no-such-job")
    code, _, err = explain(reader.with_name("missing.yaml"), "default", "x")
    assert code == 2
    assert "cannot load kubeconfig" in err


def scrapes(system: System) -> dict[str, str]:
    leader = wait_for(system.leader, timeout=30, what="a leader")
    webhook = f"https://127.0.0.1:{system.ctx.port(GangWebhook.name)}/metrics"
    return {
        "provisioner": httpx.get(f"http://127.0.0.1:{system.ctx.port(leader)}/metrics").text,
        "webhook": httpx.get(
            webhook, verify=ssl.create_default_context(cafile=system.ctx.ca_file)
        ).text,
    }


def test_cost_metric_bills_a_gang_by_state(system: System, namespace: str) -> None:
    label = unique("cost")
    pool = gnp(namespace, label)
    job = system.world.submit(sample_job("costed", namespace, pool=label, keep_warm_ttl="2s"))
    wait_for(lambda: system.complete(job), timeout=120, what="the Job complete")
    wait_for(lambda: not system.managed_live() or None, timeout=90, what="the set released")

    def billed() -> dict[str, float] | None:
        s = Scrape.parse(scrapes(system)["provisioner"])
        found = {
            dict(labels)["state"]: v
            for labels, v in s.with_name("atomic_gang_instance_seconds_total").items()
            if dict(labels)["pool"] == pool
        }
        return found if {"launching", "running", "keep-warm"} <= set(found) else None

    states = wait_for(billed, timeout=30, what="the pool's instance-seconds")
    assert "stranded" not in states
    assert all(v > 0 for v in states.values()), states
    assert states["keep-warm"] <= 4 * 2 * 3  # 4 instances, keep-warm-ttl 2s (and a margin)


def test_both_services_metrics_pass_promtool_check_metrics(system: System) -> None:
    bins = Bins.load()
    bins.ensure(("promtool",))
    for service, text in scrapes(system).items():
        assert "atomic_gang_" in text
        done = subprocess.run(
            [str(bins.path("promtool")), "check", "metrics"],
            input=text,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{service}: {done.stdout}{done.stderr}"
