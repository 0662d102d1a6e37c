"""Wait on a condition with a deadline: the only way tests synchronise."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | None], *, timeout: float, interval: float = 0.05, what: str = ""
) -> T:
    """Call ``probe`` until it returns a truthy value; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception as exc:
            last = exc
        else:
            if value:
                return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}: {last!r}")
