"""Port picking: outside the ephemeral range, distinct, and actually free."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from atomic_gang_devstack import ports


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("32768\t60999\n", (32768, 60999), id="tab"),
        pytest.param("1024 65000", (1024, 65000), id="space"),
    ],
)
def test_parse_port_range(text: str, expected: tuple[int, int]) -> None:
    assert ports.parse_port_range(text) == expected


@pytest.mark.parametrize("text", ["", "70000 80000", "500 100", "a b"])
def test_parse_port_range_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - int() and our check both raise ValueError
        ports.parse_port_range(text)


@pytest.mark.parametrize(
    ("ephemeral", "expected"),
    [
        pytest.param((32768, 60999), (10000, 32767), id="linux-default"),
        pytest.param((10500, 60999), (61000, 65535), id="no-room-below"),
    ],
)
def test_candidate_range_avoids_ephemeral(
    ephemeral: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert ports.candidate_range(ephemeral) == expected


def test_picker_gives_distinct_bindable_ports() -> None:
    picker = ports.PortPicker(rng=random.Random(7), registry=None)
    picked = [picker.pick() for _ in range(20)]

    assert len(set(picked)) == 20
    low, high = ports.candidate_range(ports.ephemeral_range())
    assert all(low <= p <= high for p in picked)
    assert all(ports.is_free(p) for p in picked)


def test_picker_skips_a_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]

        class Scripted(random.Random):
            def __init__(self) -> None:
                super().__init__()
                self.calls = 0

            def randint(self, a: int, b: int) -> int:
                self.calls += 1
                return taken if self.calls == 1 else a + self.calls

        picker = ports.PortPicker(rng=Scripted(), registry=None)
        assert picker.pick() != taken


def test_picker_gives_up_loudly() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]

        class Always(random.Random):
            def randint(self, a: int, b: int) -> int:
                return int(taken)

        with pytest.raises(ports.NoFreePortError):
            ports.PortPicker(rng=Always(), registry=None).pick(attempts=3)


def test_registry_keeps_two_launchers_apart(tmp_path: Path) -> None:
    registry = tmp_path / "ports.json"

    class Same(random.Random):
        """Both launchers' RNGs propose the same ports in the same order."""

        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def randint(self, a: int, b: int) -> int:
            self.n += 1
            return a + 500 + self.n

    first = ports.PortPicker(rng=Same(), registry=registry, clock=1000.0)
    second = ports.PortPicker(rng=Same(), registry=registry, clock=1001.0)
    a = [first.pick() for _ in range(3)]
    b = [second.pick() for _ in range(3)]
    assert not set(a) & set(b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"20000": 990.0, "20001": 900.0}', {20000: 990.0}, id="expiry"),
        pytest.param("", {}, id="empty"),
        pytest.param("not json", {}, id="garbage"),
        pytest.param("[1, 2]", {}, id="wrong-shape"),
    ],
)
def test_recent_picks(text: str, expected: dict[int, float]) -> None:
    assert ports.recent_picks(text, now=1000.0) == expected
