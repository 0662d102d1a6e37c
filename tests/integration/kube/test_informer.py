"""Informer against a real apiserver: events, indexers, resume, 410 relist, bookmarks."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from atomic_gang_provisioner.kube import (
    Handlers,
    Informer,
    KubeClient,
    WatchStream,
    by_label,
    by_owner_uid,
    object_key,
)
from atomic_gang_provisioner.kube.objects import KubeObject
from tests.integration.kube.conftest import FIGURES, ControlPlane
from tests.support import resources as r
from tests.support.indexers import by_field
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube
WAIT = 15.0


class Recorder:
    """Handlers that log (kind, key, resourceVersion, monotonic time)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, str, float]] = []
        self.lock = threading.Lock()

    def _add(self, kind: str, obj: KubeObject) -> None:
        with self.lock:
            rv = obj["metadata"].get("resourceVersion", "")
            self.log.append((kind, object_key(obj), rv, time.monotonic()))

    @property
    def handlers(self) -> Handlers:
        return Handlers(
            on_add=lambda o: self._add("add", o),
            on_update=lambda _old, new: self._add("update", new),
            on_delete=lambda o: self._add("delete", o),
        )

    def kinds(self, key: str) -> list[str]:
        with self.lock:
            return [k for k, name, _, _ in self.log if name == key]

    def first(self, kind: str, key: str, after: float = 0.0) -> float | None:
        with self.lock:
            return next(
                (t for k, n, _, t in self.log if k == kind and n == key and t >= after), None
            )


@pytest.fixture
def informers() -> Iterator[list[Informer]]:
    made: list[Informer] = []
    yield made
    for inf in made:
        inf.stop()


def started(informers: list[Informer], inf: Informer, rec: Recorder | None = None) -> Informer:
    if rec is not None:
        inf.add_handlers(rec.handlers)
    informers.append(inf)
    inf.start()
    assert inf.wait_for_sync(WAIT)
    return inf


def until(cond: Any, what: str = "") -> Any:
    return wait_for(cond, timeout=WAIT, interval=0.002, what=what)


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
    }


def ready_patch(status: str) -> dict[str, Any]:
    cond = {"type": "Ready", "status": status, "reason": "KubeletReady", "message": "test"}
    return {"status": {"conditions": [cond]}}


def test_node_events_reach_handlers_in_milliseconds(
    client: KubeClient, informers: list[Informer]
) -> None:
    rec = Recorder()
    inf = started(
        informers,
        Informer(client, r.NODES, label_selector="suite=latency"),
        rec,
    )
    client.create(r.NODES, node("lat-1", suite="latency"))
    until(lambda: inf.get("lat-1"), "node added")
    lat: list[float] = []
    rtt: list[float] = []
    for i in range(40):
        t0 = time.monotonic()
        client.patch(
            r.NODES,
            "lat-1",
            ready_patch("True" if i % 2 == 0 else "False"),
            subresource="status",
        )
        rtt.append((time.monotonic() - t0) * 1000)
        seen = until(lambda t0=t0: rec.first("update", "lat-1", after=t0), "update seen")
        lat.append((seen - t0) * 1000)
    cached = inf.get("lat-1")
    assert cached is not None
    assert cached["status"]["conditions"][0]["status"] == "False"
    p50 = statistics.median(lat)
    FIGURES["Node Ready flip: PATCH sent -> handler called (ms)"] = (
        f"p50 {p50:.1f}, p90 {statistics.quantiles(lat, n=10)[-1]:.1f}, max {max(lat):.1f}"
        f" (n=40; the PATCH round trip alone: p50 {statistics.median(rtt):.1f})"
    )
    assert p50 < 50, f"watch delivery p50 {p50:.1f} ms"
    client.delete(r.NODES, "lat-1")
    until(lambda: rec.kinds("lat-1")[-1:] == ["delete"], "delete seen")
    assert inf.get("lat-1") is None


def test_indexers_follow_changes(
    client: KubeClient, informers: list[Informer], namespace: str
) -> None:
    inf = started(
        informers,
        Informer(
            client,
            r.NODES,
            label_selector="suite=index",
            indexers={"providerID": by_field("spec", "providerID"), "pool": by_label("pool")},
        ),
    )
    for n, pool in (("ix-1", "p1"), ("ix-2", "p1"), ("ix-3", "p2")):
        client.create(r.NODES, node(n, suite="index", pool=pool))
    until(lambda: len(inf.list()) == 3)
    assert [o["metadata"]["name"] for o in inf.by_index("pool", "p1")] == ["ix-1", "ix-2"]
    assert [
        o["metadata"]["name"] for o in inf.by_index("providerID", "aws:///us-east-1a/i-ix-3")
    ] == ["ix-3"]
    client.patch(r.NODES, "ix-2", {"metadata": {"labels": {"pool": "p2"}}})
    until(lambda: len(inf.by_index("pool", "p2")) == 2, "re-indexed on update")
    client.delete(r.NODES, "ix-1")
    until(lambda: inf.by_index("pool", "p1") == [], "dropped from the index on delete")
    assert inf.by_index("providerID", "aws:///us-east-1a/i-ix-1") == []

    owners = started(
        informers,
        Informer(client, r.CONFIG_MAPS, namespace=namespace, indexers={"owner": by_owner_uid()}),
    )
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-uid-1"}
    client.create(
        r.CONFIG_MAPS,
        {"metadata": {"name": "owned", "namespace": namespace, "ownerReferences": [ref]}},
    )
    until(lambda: owners.by_index("owner", "job-uid-1"), "owner index")
    assert owners.get(f"{namespace}/owned") is not None


def test_a_node_losing_the_selected_label_leaves_the_cache_as_a_delete(
    client: KubeClient, informers: list[Informer]
) -> None:
    """How a gang Node whose pool label is removed leaves the provisioner's Node cache."""
    rec = Recorder()
    inf = started(informers, Informer(client, r.NODES, label_selector="suite=leave"), rec)
    client.create(r.NODES, node("leave-1", suite="leave"))
    until(lambda: inf.get("leave-1"), "node added")
    client.patch(r.NODES, "leave-1", {"metadata": {"labels": {"suite": None}}})
    until(lambda: rec.kinds("leave-1")[-1:] == ["delete"], "delete seen")
    assert inf.get("leave-1") is None
    client.delete(r.NODES, "leave-1")


def test_relist_brings_what_the_transform_keeps_now(
    client: KubeClient, informers: list[Informer], namespace: str
) -> None:
    """The transform keeps ``a``, then ``b``: after ``relist`` the cache holds ``b``, and
    the handlers saw ``a`` go and ``b`` come."""
    kept = {"a"}

    def keep(obj: KubeObject) -> KubeObject | None:
        return obj if obj["metadata"]["name"] in kept else None

    rec = Recorder()
    inf = started(
        informers, Informer(client, r.CONFIG_MAPS, namespace=namespace, transform=keep), rec
    )
    for name in ("b", "a"):
        client.create(r.CONFIG_MAPS, {"metadata": {"name": name, "namespace": namespace}})
    until(lambda: inf.get(f"{namespace}/a"), "a kept")
    assert inf.get(f"{namespace}/b") is None
    kept.clear()
    kept.add("b")
    inf.relist()
    until(lambda: inf.get(f"{namespace}/a") is None and inf.get(f"{namespace}/b"), "b instead")
    assert (rec.kinds(f"{namespace}/a"), rec.kinds(f"{namespace}/b")) == (
        ["add", "delete"],
        ["add"],
    )
    assert inf.stats.lists == 2


def test_resumes_when_the_server_ends_each_watch(
    client: KubeClient, informers: list[Informer], namespace: str
) -> None:
    rec = Recorder()
    inf = started(
        informers,
        Informer(client, r.CONFIG_MAPS, namespace=namespace, watch_timeout_seconds=1),
        rec,
    )
    for i in range(4):
        before = inf.stats.watches
        client.create(r.CONFIG_MAPS, {"metadata": {"name": f"c{i}", "namespace": namespace}})
        until(lambda before=before: inf.stats.watches > before, "a new watch stream")
    until(lambda: len(inf.list()) == 4, "all four objects")
    assert inf.stats.lists == 1, "streams ending is no reason to relist"
    assert inf.stats.watches >= 4
    for i in range(4):
        assert rec.kinds(f"{namespace}/c{i}") == ["add"], "each add seen exactly once"


def test_relists_after_410_and_reports_what_changed_meanwhile(
    client: KubeClient, control_plane: ControlPlane, informers: list[Informer], namespace: str
) -> None:
    def secret(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": namespace}, "data": {}}

    for name in ("keep", "drop", "edit"):
        client.create(r.SECRETS, secret(name))
    gated = GatedClient(client)
    rec = Recorder()
    inf = started(
        informers, Informer(gated, r.SECRETS, namespace=namespace, watch_timeout_seconds=1), rec
    )
    gated.gate.clear()  # the next watch waits; secrets have no watch cache: watches read etcd
    assert gated.parked.wait(WAIT), "informer parked before its next watch"
    stale_rv = inf.resource_version
    client.delete(r.SECRETS, "drop", namespace=namespace)
    client.patch(r.SECRETS, "edit", {"metadata": {"labels": {"v": "2"}}}, namespace=namespace)
    client.create(r.SECRETS, secret("new"))
    control_plane.compact_etcd()
    gated.gate.set()
    until(lambda: inf.stats.gone >= 1, "410 Gone seen")
    until(lambda: inf.stats.lists >= 2, "relisted")
    names = [f"{namespace}/{n}" for n in ("edit", "keep", "new")]
    until(lambda: sorted(object_key(o) for o in inf.list()) == names)
    assert rec.kinds(f"{namespace}/drop") == ["add", "delete"]
    assert rec.kinds(f"{namespace}/edit") == ["add", "update"]
    assert rec.kinds(f"{namespace}/new") == ["add"]
    assert rec.kinds(f"{namespace}/keep") == ["add"]
    assert int(inf.resource_version) > int(stale_rv)
    client.create(r.SECRETS, secret("after"))
    until(lambda: inf.get(f"{namespace}/after"), "watching again after the relist")


def test_bookmarks_advance_the_resource_version(
    client: KubeClient, informers: list[Informer], namespace: str
) -> None:
    other = f"{namespace}-other"
    client.create(r.NAMESPACES, {"metadata": {"name": other}})
    inf = started(
        informers, Informer(client, r.CONFIG_MAPS, namespace=namespace, watch_timeout_seconds=3)
    )
    start_rv = int(inf.resource_version)
    stop = threading.Event()

    def churn() -> None:  # changes the informer filters out: the cache moves, we get bookmarks
        i = 0
        while not stop.wait(0.1):
            i += 1
            client.create(r.CONFIG_MAPS, {"metadata": {"name": f"x{i}", "namespace": other}})

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        wait_for(lambda: inf.stats.bookmarks >= 1, timeout=20, interval=0.05, what="a bookmark")
    finally:
        stop.set()
        t.join()
    assert inf.stats.events == 0
    assert int(inf.resource_version) > start_rv
    assert inf.stats.lists == 1


def test_resync_replays_updates(
    client: KubeClient, informers: list[Informer], namespace: str
) -> None:
    client.create(r.CONFIG_MAPS, {"metadata": {"name": "r", "namespace": namespace}})
    rec = Recorder()
    inf = started(
        informers, Informer(client, r.CONFIG_MAPS, namespace=namespace, resync_seconds=0.1), rec
    )
    until(lambda: rec.kinds(f"{namespace}/r").count("update") >= 2, "two resyncs")
    assert inf.stats.resyncs >= 2


def test_late_handlers_failing_handlers_and_prompt_stop(client: KubeClient, namespace: str) -> None:
    client.create(r.CONFIG_MAPS, {"metadata": {"name": "early", "namespace": namespace}})
    inf = Informer(client, r.CONFIG_MAPS, namespace=namespace)

    def boom(obj: KubeObject) -> None:
        raise RuntimeError("handler bug")

    inf.add_handlers(Handlers(on_add=boom))
    inf.start()
    try:
        assert inf.wait_for_sync(WAIT)
        assert inf.has_synced()
        late = Recorder()
        inf.add_handlers(late.handlers)
        assert late.kinds(f"{namespace}/early") == ["add"], "replayed to a late handler"
        client.create(r.CONFIG_MAPS, {"metadata": {"name": "later", "namespace": namespace}})
        until(
            lambda: late.kinds(f"{namespace}/later") == ["add"], "still alive after a bad handler"
        )
    finally:
        t0 = time.monotonic()
        inf.stop()
        stopped = time.monotonic() - t0
    assert stopped < 2.0, f"stop took {stopped:.2f}s with a 5-minute watch open"
    assert not any(t.is_alive() for t in inf._threads)


class GatedClient(KubeClient):
    """The real client, except that ``watch`` waits while ``gate`` is closed."""

    def __init__(self, inner: KubeClient) -> None:
        super().__init__(inner.transport, timeout=inner.timeout)
        self.gate, self.parked = threading.Event(), threading.Event()
        self.gate.set()

    def watch(self, *args: Any, **kwargs: Any) -> WatchStream:
        if not self.gate.is_set():
            self.parked.set()
            assert self.gate.wait(WAIT)
        return super().watch(*args, **kwargs)
