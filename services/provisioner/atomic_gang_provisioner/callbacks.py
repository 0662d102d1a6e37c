"""Calling other code back from a loop that must keep running (an informer's
dispatch, a worker's metrics hooks): a failing callback is logged, never raised."""

from __future__ import annotations

import logging
from collections.abc import Callable


def call_guarded(
    fn: Callable[..., None] | None, *args: object, log: logging.Logger, what: str
) -> None:
    """``fn(*args)`` if ``fn`` is set; an exception is logged as "``what`` failed"."""
    if fn is None:
        return
    try:
        fn(*args)
    except Exception:
        log.exception("%s failed", what)
