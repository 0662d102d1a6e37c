"""An informer's transform: what it leaves out never reaches the store or a handler, a
stored object that it turns away leaves as a delete, and ``relist`` lists again when
what it keeps has changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from atomic_gang_provisioner.kube import Handlers, Informer, Listing
from atomic_gang_provisioner.kube.objects import KubeObject, WatchEvent
from tests.support import resources as r

Obj = dict[str, Any]


def obj(name: str, rv: int, *, ours: bool) -> Obj:
    meta: Obj = {"namespace": "ns", "name": name, "resourceVersion": str(rv)}
    if ours:
        meta["labels"] = {"ours": "yes"}
    return {"metadata": meta, "spec": {"blob": "x" * 100}}


def keep_ours(o: KubeObject) -> KubeObject | None:
    """Keep our objects, without their spec."""
    if (o["metadata"].get("labels") or {}).get("ours") != "yes":
        return None
    return {"metadata": o["metadata"]}


class Stream:
    def __init__(self, events: list[WatchEvent], after: Callable[[], None]) -> None:
        self.events, self.after = events, after

    def __iter__(self) -> Iterator[WatchEvent]:
        yield from self.events
        self.after()

    def close(self) -> None:
        return None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class ScriptedClient:
    """Lists answer from ``listed`` (through ``keep``, as KubeClient does); each watch
    plays the next script, then runs its ``after``."""

    def __init__(self, listed: list[Obj], scripts: list[tuple[list[WatchEvent], Any]]) -> None:
        self.listed, self.scripts, self.lists = listed, scripts, 0

    def list(self, res: Any, *, keep: Any = None, **_: Any) -> Listing:
        self.lists += 1
        items = [k for o in self.listed if (k := keep(o) if keep else o) is not None]
        return Listing(items=items, resource_version=str(self.lists))

    def watch(self, res: Any, **_: Any) -> Stream:
        events, after = self.scripts.pop(0)
        return Stream(events, after)


class Log:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Obj]] = []

    @property
    def handlers(self) -> Handlers:
        return Handlers(
            on_add=lambda o: self.seen.append(("add", o["metadata"]["name"], o)),
            on_update=lambda _o, n: self.seen.append(("update", n["metadata"]["name"], n)),
            on_delete=lambda o: self.seen.append(("delete", o["metadata"]["name"], o)),
        )

    def names(self) -> list[tuple[str, str]]:
        return [(kind, name) for kind, name, _ in self.seen]


def informer(client: ScriptedClient) -> tuple[Informer, Log]:
    inf = Informer(client, r.WORKLOADS, transform=keep_ours)  # type: ignore[arg-type]
    log = Log()
    inf.add_handlers(log.handlers)
    return inf, log


def ev(kind: str, o: Obj) -> WatchEvent:
    return {"type": kind, "object": o}  # type: ignore[typeddict-item]


def test_a_foreign_object_never_reaches_the_store_nor_a_handler() -> None:
    inf, log = informer(ScriptedClient([], []))
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        inf._apply(ev(kind, obj("theirs", 2, ours=False)))
    assert inf.list() == []
    assert log.seen == []


def test_ours_is_stored_as_the_transform_keeps_it() -> None:
    inf, log = informer(ScriptedClient([], []))
    inf._apply(ev("ADDED", obj("mine", 2, ours=True)))
    inf._apply(ev("MODIFIED", obj("mine", 3, ours=True)))
    stored = inf.get("ns/mine")
    assert stored == {"metadata": obj("mine", 3, ours=True)["metadata"]}
    assert [o for _, _, o in log.seen] == [
        keep_ours(obj(n, rv, ours=True)) for n, rv in [("mine", 2), ("mine", 3)]
    ]
    inf._apply(ev("DELETED", obj("mine", 4, ours=True)))
    assert inf.list() == []
    assert log.names() == [("add", "mine"), ("update", "mine"), ("delete", "mine")]


def test_a_stored_object_the_transform_turns_away_leaves_as_a_delete() -> None:
    """As an object leaving a label selector: a check removed from a Workload."""
    inf, log = informer(ScriptedClient([], []))
    inf._apply(ev("ADDED", obj("mine", 2, ours=True)))
    inf._apply(ev("MODIFIED", obj("mine", 3, ours=False)))
    assert inf.list() == []
    assert log.names() == [("add", "mine"), ("delete", "mine")]
    assert log.seen[-1][2]["metadata"]["resourceVersion"] == "2"  # the version we had
    inf._apply(ev("MODIFIED", obj("mine", 4, ours=True)))  # and back: an add
    assert log.names()[-1] == ("add", "mine")


def test_a_list_keeps_only_what_the_transform_keeps() -> None:
    client = ScriptedClient([obj("a", 1, ours=True), obj("b", 1, ours=False)], [])
    inf, log = informer(client)
    inf._relist()
    assert [o["metadata"]["name"] for o in inf.list()] == ["a"]
    assert "spec" not in inf.get("ns/a")  # type: ignore[operator]
    assert log.names() == [("add", "a")]


def test_relist_lists_again_after_what_the_transform_keeps_changed() -> None:
    """The first list keeps a; then the transform keeps b instead (our check names
    changed): ``relist`` ends the watch, the new list adds b and deletes a."""
    kept = {"a"}

    def keep(o: KubeObject) -> KubeObject | None:
        return o if o["metadata"]["name"] in kept else None

    inf: Informer

    def switch() -> None:
        kept.clear()
        kept.add("b")
        inf.relist()

    def stop() -> None:
        inf._stop.set()

    client = ScriptedClient(
        [obj("a", 1, ours=False), obj("b", 1, ours=False)],
        [([], switch), ([], stop)],
    )
    inf = Informer(client, r.WORKLOADS, transform=keep)  # type: ignore[arg-type]
    log = Log()
    inf.add_handlers(log.handlers)
    inf._run()  # list, watch (relist asked), list again, watch (stop)
    assert client.lists == 2
    assert [o["metadata"]["name"] for o in inf.list()] == ["b"]
    assert log.names() == [("add", "a"), ("add", "b"), ("delete", "a")]
    assert inf.stats.errors == 0
