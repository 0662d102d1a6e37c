"""Port picking: outside the ephemeral range, distinct, and actually free."""

from __future__ import annotations

import random
import socket

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
    picker = ports.PortPicker(rng=random.Random(7))
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
                return taken if self.calls == 1 else a

        picker = ports.PortPicker(rng=Scripted())
        assert picker.pick() != taken


def test_picker_gives_up_loudly() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]

        class Always(random.Random):
            def randint(self, a: int, b: int) -> int:
                return int(taken)

        with pytest.raises(ports.NoFreePortError):
            ports.PortPicker(rng=Always()).pick(attempts=3)
