"""The one exponential-backoff formula every retry here uses.

Attempt ``k`` (counted from 0) may wait up to ``min(cap, base * 2**k)``; ``spread`` is
the fraction of that ceiling left to chance, and ``draw`` in [0, 1] how much of it is
taken (1: the full ceiling). The callers differ only in the draw: a random one for the
work queue, the EC2 caller and the informer; a hash of (pool, attempt) for the pool's
acquire backoff, so that its ``decide`` stays pure.
"""

from __future__ import annotations

_MAX_EXPONENT = 62  # 2**62 * any sane base is far past any cap; avoids float overflow


def exponential(attempt: int, *, base: float, cap: float, spread: float, draw: float) -> float:
    ceiling = min(cap, base * 2.0 ** min(max(attempt, 0), _MAX_EXPONENT))
    return ceiling * ((1.0 - spread) + spread * draw)
