"""Free loopback ports, picked outside the kernel's ephemeral range.

A port from ``bind(0)`` comes from the ephemeral range, which every outgoing
connection (each client of the apiserver) also draws from, so it could be taken
again between our check and the child's own bind. So we pick at random below
that range and test-bind. Two launchers starting at the same moment could
still pick the same free port before either child binds it; a small shared
registry of recently handed-out ports (flock-protected, entries expire after
a minute, by which time the owner has bound them) closes that window.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import tempfile
import time
from pathlib import Path

DEFAULT_EPHEMERAL = (32768, 60999)
LOWEST = 10000
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
REGISTRY = Path(tempfile.gettempdir()) / f"atomic-gang-ports-{os.getuid()}.json"
HOLD_SECONDS = 60.0


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
    """Hands out distinct free ports, also distinct from other launchers' recent picks."""

    def __init__(
        self,
        *,
        rng: random.Random | None = None,
        host: str = "127.0.0.1",
        registry: Path | None = REGISTRY,
        clock: float | None = None,
    ) -> None:
        self._rng = rng or random.SystemRandom()
        self._host = host
        self._registry = registry
        self._clock = clock  # fixed "now" for tests
        self._given: set[int] = set()
        self._low, self._high = candidate_range(ephemeral_range())

    def pick(self, attempts: int = 200) -> int:
        if self._registry is None:
            return self._pick(attempts, set())
        with self._registry.open("a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(0)
            now = self._clock if self._clock is not None else time.time()
            held = recent_picks(fh.read(), now)
            port = self._pick(attempts, set(held))
            held[port] = now
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps({str(p): t for p, t in held.items()}))
        return port

    def _pick(self, attempts: int, held: set[int]) -> int:
        for _ in range(attempts):
            port = self._rng.randint(self._low, self._high)
            if port not in self._given and port not in held and is_free(port, self._host):
                self._given.add(port)
                return port
        raise NoFreePortError(f"no free port in {self._low}-{self._high} after {attempts} tries")


def recent_picks(text: str, now: float) -> dict[int, float]:
    """Registry entries younger than HOLD_SECONDS; an unreadable registry counts as empty."""
    try:
        raw = json.loads(text) if text.strip() else {}
        return {int(p): float(t) for p, t in raw.items() if now - float(t) < HOLD_SECONDS}
    except (ValueError, AttributeError, TypeError):
        return {}
