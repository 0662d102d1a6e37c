"""What the contract tests read: every version of a Workload's check entry (from a
watch, so a state Kueue resets within milliseconds is still seen), our provisioner's
count of check writes, and objects Kueue admits that are not Jobs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import yaml

from atomic_gang.resources import WORKLOADS
from atomic_gang_devstack import dev_objects
from atomic_gang_provisioner.kube import KubeClient, NotFoundError, Resource
from tests.e2e.system.harness import System
from tests.support.scrape import Scrape
from tests.support.wait import wait_for

CHECK = dev_objects.ADMISSION_CHECK
PROVISIONER = "atomic-gang-provisioner-0"


@dataclass(frozen=True)
class Seen:
    """One version of the Workload, as far as the contract goes."""

    resource_version: str
    state: str
    message: str
    retry_count: int
    requeue_after_seconds: int | None
    conditions: dict[str, tuple[str, str]]  # type -> (status, reason)
    active: bool


def seen(wl: dict[str, Any]) -> Seen:
    status = wl.get("status") or {}
    ours: dict[str, Any] = next(
        (c for c in status.get("admissionChecks") or [] if c.get("name") == CHECK), {}
    )
    return Seen(
        resource_version=str(wl["metadata"].get("resourceVersion", "")),
        state=str(ours.get("state", "")),
        message=str(ours.get("message", "")),
        retry_count=int(ours.get("retryCount") or 0),
        requeue_after_seconds=ours.get("requeueAfterSeconds"),
        conditions={
            str(c["type"]): (str(c.get("status")), str(c.get("reason", "")))
            for c in status.get("conditions") or []
        },
        active=(wl.get("spec") or {}).get("active", True) is not False,
    )


class WorkloadLog:
    """Every version of the Workloads in ``namespace`` from ``resource_version`` on,
    by Workload name (a watch on a thread; ``close`` ends it)."""

    def __init__(self, kube: KubeClient, namespace: str, resource_version: str) -> None:
        self.versions: dict[str, list[Seen]] = {}
        self._lock = threading.Lock()
        self._stream = kube.watch(WORKLOADS, namespace=namespace, resource_version=resource_version)
        self._thread = threading.Thread(target=self._run, name="workload-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # closing the stream ends the iteration
            for ev in self._stream:
                if ev["type"] in ("ADDED", "MODIFIED"):
                    wl = ev["object"]
                    with self._lock:
                        self.versions.setdefault(wl["metadata"]["name"], []).append(seen(wl))

    def of(self, name: str) -> list[Seen]:
        with self._lock:
            return list(self.versions.get(name, []))

    def close(self) -> None:
        self._stream.close()
        self._thread.join(timeout=10)


def check_writes(system: System) -> dict[str, float]:
    """Our provisioner's check writes so far, by state (its admission_check_transitions)."""
    port = system.ctx.port(PROVISIONER)
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    found = Scrape.parse(text).with_name("atomic_gang_admission_check_transitions_total")
    return {dict(labels)["state"]: value for labels, value in found.items()}


def workload_of(system: System, namespace: str, owner_uid: str) -> dict[str, Any] | None:
    for wl in system.kube.list(WORKLOADS, namespace=namespace).items:
        refs = wl["metadata"].get("ownerReferences") or []
        if any(r.get("uid") == owner_uid for r in refs):
            return dict(wl)
    return None


WEBHOOK_CONFIGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
    kind="ValidatingWebhookConfiguration",
)


@contextlib.contextmanager
def webhook_off(kueue: System) -> Iterator[None]:
    """Our ValidatingWebhookConfiguration removed for the block (as an operator who turned
    the webhook off would leave it), then restored and enforced again."""
    saved = kueue.kube.get(WEBHOOK_CONFIGS, dev_objects.WEBHOOK_CONFIG)
    probe = yaml.safe_dump(dev_objects.probe_job("default"))

    def enforced() -> bool:
        done = kueue.kubectl.run("create", "--dry-run=server", "-f", "-", stdin=probe, check=False)
        return done.returncode != 0 and dev_objects.PROBE_VALUE in done.stderr

    kueue.kube.delete(WEBHOOK_CONFIGS, dev_objects.WEBHOOK_CONFIG)
    try:
        wait_for(lambda: not enforced(), timeout=30, what="our webhook no longer called")
        yield
    finally:
        with contextlib.suppress(NotFoundError):
            kueue.kube.delete(WEBHOOK_CONFIGS, dev_objects.WEBHOOK_CONFIG)
        meta = saved["metadata"]
        saved["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
        kueue.kube.create(WEBHOOK_CONFIGS, saved)
        wait_for(enforced, timeout=30, what="our webhook enforced again")
