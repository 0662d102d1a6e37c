"""``atomic-gang explain`` finds the pool a Job's label names in its own namespace, and
never shows another namespace's."""

from __future__ import annotations

from typing import Any, cast

from atomic_gang_cli import explain
from atomic_gang_cli.kube import Reader


class Pools:
    """A Reader that holds some GangNodePools by name."""

    def __init__(self, *pools: dict[str, Any]) -> None:
        self.by_name = {p["metadata"]["name"]: p for p in pools}
        self.asked: list[str] = []

    def pool(self, name: str) -> dict[str, Any] | None:
        self.asked.append(name)
        return self.by_name.get(name)


def gnp(name: str, owner: str | None, claimant: str | None = None) -> dict[str, Any]:
    claim = {"namespace": claimant, "name": "wl"} if claimant else None
    return {"metadata": {"name": name}, "spec": {"ownerNamespace": owner, "claim": claim}}


def found(reader: Pools, namespace: str = "team-b") -> str | None:
    got = explain._pool(cast(Reader, reader), "pretrain", namespace)
    return None if got is None else str(got["metadata"]["name"])


def test_the_namespaces_own_pool_first() -> None:
    reader = Pools(gnp("team-b.pretrain", "team-b"), gnp("pretrain", "team-b"))
    assert found(reader) == "team-b.pretrain"
    assert reader.asked == ["team-b.pretrain"]


def test_a_bare_named_pool_only_when_it_is_this_namespaces() -> None:
    assert found(Pools(gnp("pretrain", "team-b"))) == "pretrain"
    assert found(Pools(gnp("pretrain", None, claimant="team-b"))) == "pretrain"
    assert found(Pools(gnp("pretrain", "team-a"))) is None  # another team's: not shown
    assert found(Pools(gnp("pretrain", None, claimant="team-a"))) is None
    assert found(Pools()) is None
