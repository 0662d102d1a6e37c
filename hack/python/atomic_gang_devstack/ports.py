"""Free loopback ports, picked outside the kernel's ephemeral range.

A port from ``bind(0)`` comes from the ephemeral range, which every outgoing
connection (each client of the apiserver) also draws from, so it could be taken
again between our check and the child's own bind. Picking at random below that
range and test-binding it makes the window harmless in practice; two launchers
on one machine still get different ports because a bound port fails the test.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

DEFAULT_EPHEMERAL = (32768, 60999)
LOWEST = 10000
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


class NoFreePortError(RuntimeError):
    """No bindable port was found in the candidate range."""


def parse_port_range(text: str) -> tuple[int, int]:
    """Parse ``ip_local_port_range`` (two integers, tab- or space-separated)."""
    low, high = (int(x) for x in text.split())
    if not 0 < low <= high < 65536:
        raise ValueError(f"bad port range {text!r}")
    return low, high


def ephemeral_range() -> tuple[int, int]:
    try:
        return parse_port_range(RANGE_FILE.read_text(encoding="ascii"))
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL


def candidate_range(ephemeral: tuple[int, int]) -> tuple[int, int]:
    """The widest port span that avoids the ephemeral range (below it if room)."""
    low, high = ephemeral
    if low - LOWEST >= 1000:
        return LOWEST, low - 1
    return high + 1, 65535


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortPicker:
    """Hands out distinct free ports; remembers what it gave so far."""

    def __init__(self, *, rng: random.Random | None = None, host: str = "127.0.0.1") -> None:
        self._rng = rng or random.SystemRandom()
        self._host = host
        self._given: set[int] = set()
        self._low, self._high = candidate_range(ephemeral_range())

    def pick(self, attempts: int = 200) -> int:
        for _ in range(attempts):
            port = self._rng.randint(self._low, self._high)
            if port not in self._given and is_free(port, self._host):
                self._given.add(port)
                return port
        raise NoFreePortError(f"no free port in {self._low}-{self._high} after {attempts} tries")
