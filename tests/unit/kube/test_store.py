"""Store: indices always equal a brute-force scan, through any sequence of changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from atomic_gang_provisioner.kube import by_label, by_owner_uid
from atomic_gang_provisioner.kube.store import Store
from tests.support.indexers import by_field, by_namespace

NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
POOLS = st.one_of(st.none(), st.sampled_from(["p1", "p2"]))
OWNERS = st.lists(st.sampled_from(["u1", "u2", "u3"]), max_size=2)


def obj(name: str, pool: str | None, owners: list[str], rv: int) -> dict[str, Any]:
    labels = {} if pool is None else {"pool": pool}
    refs = [{"uid": u, "kind": "Job", "controller": i == 0} for i, u in enumerate(owners)]
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": labels,
            "ownerReferences": refs,
            "resourceVersion": str(rv),
        },
        "spec": {"providerID": f"aws:///{name}"} if pool else {},
    }


class InspectableStore(Store):
    """The store, with a look at its keys and at the values each index holds."""

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def index_values(self, index: str) -> list[str]:
        with self._lock:
            return sorted(self._indices[index])


INDEXERS = {
    "pool": by_label("pool"),
    "provider": by_field("spec", "providerID"),
    "owner": by_owner_uid(),
    "controller": by_owner_uid(controller_only=True, kind="Job"),
    "ns": by_namespace,
}

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), NAMES, POOLS, OWNERS),
        st.tuples(st.just("remove"), NAMES, st.none(), st.just([])),
        st.tuples(st.just("replace"), st.lists(NAMES, unique=True), POOLS, OWNERS),
    ),
    max_size=30,
)


@given(ops=OPS)
def test_indices_match_a_scan(ops: list[tuple[Any, ...]]) -> None:
    store = InspectableStore(INDEXERS)
    model: dict[str, dict[str, Any]] = {}
    for rv, (op, target, pool, owners) in enumerate(ops):
        if op == "upsert":
            model[target] = obj(target, pool, owners, rv)
            store.upsert(target, model[target])
        elif op == "remove":
            model.pop(target, None)
            store.remove(target)
        else:
            fresh = {n: obj(n, pool, owners, rv) for n in target}
            added, updated, deleted = store.replace(fresh)
            assert {o["metadata"]["name"] for o in added} == fresh.keys() - model.keys()
            assert {o["metadata"]["name"] for o in deleted} == model.keys() - fresh.keys()
            assert {n["metadata"]["name"] for _, n in updated} == fresh.keys() & model.keys()
            model = fresh
    assert sorted(store.keys()) == sorted(model)
    for name, fn in INDEXERS.items():
        expected: dict[str, set[str]] = {}
        for key, o in model.items():
            for v in fn(o):
                expected.setdefault(v, set()).add(key)
        assert store.index_values(name) == sorted(expected)
        for v, keys in expected.items():
            assert {o["metadata"]["name"] for o in store.by_index(name, v)} == keys


def test_replace_reports_only_changed_versions_as_updates() -> None:
    store = Store()
    a = obj("a", None, [], 1)
    store.upsert("a", a)
    _, updated, _ = store.replace({"a": obj("a", "p1", [], 1)})
    assert updated == [], "same resourceVersion: nothing changed"
    _, updated, _ = store.replace({"a": obj("a", "p1", [], 2)})
    assert len(updated) == 1
