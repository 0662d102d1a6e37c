"""The rules of the duration annotations: ``keep-warm-ttl``, ``max-lifetime``, ``min-runtime``."""

from __future__ import annotations

from collections.abc import Mapping

from atomic_gang import allowlists, keys
from atomic_gang.durations import MAX_LENGTH, DurationError, GoDuration
from atomic_gang.errors import Collector
from atomic_gang.settings import GangSettings

HINT = f"e.g. 15m, 1h30m, 90s (ASCII digits, at most {MAX_LENGTH} characters)"


def _duration(ann: Mapping[str, str], key: str, out: Collector) -> GoDuration | None:
    raw = ann.get(key)
    if raw is None:
        return None
    try:
        return GoDuration.parse(raw)
    except DurationError:
        out.add(key, "InvalidDuration", "is not a Go duration", raw, HINT)
        return None


def keep_warm(ann: Mapping[str, str], s: GangSettings, out: Collector) -> GoDuration | None:
    ttl = _duration(ann, keys.KEEP_WARM_TTL, out)
    if ttl is None:
        return None if keys.KEEP_WARM_TTL in ann else s.defaults.keep_warm_ttl
    if not 0 <= ttl.nanoseconds <= s.limits.max_keep_warm_ttl.nanoseconds:
        out.add(
            keys.KEEP_WARM_TTL,
            "KeepWarmTTLOutOfRange",
            f"must be between 0s and limits.maxKeepWarmTTL ({s.limits.max_keep_warm_ttl})",
            ann[keys.KEEP_WARM_TTL],
            "use 0s to release nodes as soon as the job ends",
        )
        return None
    return ttl


def max_lifetime(ann: Mapping[str, str], s: GangSettings, out: Collector) -> GoDuration | None:
    life = _duration(ann, keys.MAX_LIFETIME, out)
    if life is None:
        return None if keys.MAX_LIFETIME in ann else s.defaults.max_lifetime
    if life.nanoseconds <= 0:
        out.add(
            keys.MAX_LIFETIME,
            "InvalidMaxLifetime",
            "must be greater than 0",
            ann[keys.MAX_LIFETIME],
            "e.g. 6h",
        )
        return None
    return allowlists.lifetime(ann[keys.MAX_LIFETIME], life, s, out)


def min_runtime(ann: Mapping[str, str], out: Collector) -> GoDuration | None:
    """How long a gang needs a Capacity Block for (optional; no default here: the
    provisioner falls back on capacityBlock.minRemainingSeconds)."""
    need = _duration(ann, keys.MIN_RUNTIME, out)
    if need is not None and need.nanoseconds <= 0:
        out.add(
            keys.MIN_RUNTIME,
            "InvalidMinRuntime",
            "must be greater than 0",
            ann[keys.MIN_RUNTIME],
            "the time the job needs to finish in a Capacity Block, e.g. 2h; or leave it unset",
        )
        return None
    return need
