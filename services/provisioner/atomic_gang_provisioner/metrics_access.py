"""Who may read the controller's /metrics.

Its series name pools, the namespaces and Workloads holding them and the capacity
reservations they use: one tenant's business, which another tenant must not read. So
/metrics answers only a request carrying a bearer token that the apiserver authenticates
(a TokenReview) for a user allowed ``get`` on the non-resource URL ``/metrics`` (a
SubjectAccessReview): the same contract as kube-rbac-proxy and controller-runtime's
secure metrics, so a Prometheus set up for those scrapes this unchanged. The chart's
ClusterRole ``<release>-metrics-reader`` grants exactly that ``get``.

The probes (/healthz, /readyz) stay open: they say only whether the process is up.

Verdicts are kept for ``ttl`` seconds per token (keyed by its SHA-256, never the token
itself), at most ``size`` of them, so a scrape every 30 s costs the apiserver two reviews
a minute, and a flood of bad tokens costs a bounded cache.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

from atomic_gang.resources import ACCESS_REVIEWS, TOKEN_REVIEWS
from atomic_gang_provisioner.kube import KubeClient, KubeError, Resource

PATH = "/metrics"
TTL_SECONDS = 60.0
CACHE_SIZE = 256
BEARER = "bearer "
REVIEW_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Identity:
    """The user a TokenReview names, as a SubjectAccessReview takes it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class ReviewUnavailableError(Exception):
    """The apiserver did not answer a review: no verdict, and none cached."""


class Reviewer(Protocol):
    def authenticate(self, token: str) -> Identity | None:
        """The token's user, or None when the apiserver does not accept it."""

    def may_get(self, who: Identity, path: str) -> bool:
        """Whether ``who`` may ``get`` the non-resource URL ``path``."""


class Verdict(IntEnum):
    """The HTTP status /metrics answers with."""

    ALLOWED = 200
    NO_TOKEN = 401  # none, or one the apiserver does not accept
    FORBIDDEN = 403  # a user without get on /metrics
    UNAVAILABLE = 503  # the apiserver did not answer the review


class MetricsAccess:
    """Decides a request to /metrics from its Authorization header."""

    def __init__(
        self,
        reviewer: Reviewer,
        *,
        clock: Callable[[], float] = time.monotonic,
        ttl: float = TTL_SECONDS,
        size: int = CACHE_SIZE,
    ) -> None:
        self._reviewer, self._clock, self._ttl, self._size = reviewer, clock, ttl, size
        self._known: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, authorization: str | None) -> Verdict:
        token = bearer_token(authorization)
        if token is None:
            return Verdict.NO_TOKEN
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cached(key)
        if cached is not None:
            return cached
        try:
            verdict = self._review(token)
        except ReviewUnavailableError:
            return Verdict.UNAVAILABLE  # not cached: the next scrape asks again
        self._remember(key, verdict)
        return verdict

    def _review(self, token: str) -> Verdict:
        who = self._reviewer.authenticate(token)
        if who is None:
            return Verdict.NO_TOKEN
        return Verdict.ALLOWED if self._reviewer.may_get(who, PATH) else Verdict.FORBIDDEN

    def _cached(self, key: str) -> Verdict | None:
        with self._lock:
            hit = self._known.get(key)
            if hit is None or hit[0] <= self._clock():
                return None
            return hit[1]

    def _remember(self, key: str, verdict: Verdict) -> None:
        with self._lock:
            self._known[key] = (self._clock() + self._ttl, verdict)
            self._known.move_to_end(key)
            while len(self._known) > self._size:
                self._known.popitem(last=False)  # the oldest verdict goes first


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization or authorization[: len(BEARER)].lower() != BEARER:
        return None
    token = authorization[len(BEARER) :].strip()
    return token or None


class ApiserverReviewer:
    """A ``Reviewer`` asking the apiserver (needs ``create`` on
    tokenreviews and subjectaccessreviews, which the chart grants)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def authenticate(self, token: str) -> Identity | None:
        status = self._create(TOKEN_REVIEWS, {"spec": {"token": token}})
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        extra = user.get("extra") or {}
        return Identity(
            username=str(user.get("username", "")),
            uid=str(user.get("uid", "")),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=tuple(sorted((str(k), tuple(str(v) for v in vs)) for k, vs in extra.items())),
        )

    def may_get(self, who: Identity, path: str) -> bool:
        spec: dict[str, Any] = {
            "user": who.username,
            "groups": list(who.groups),
            "nonResourceAttributes": {"path": path, "verb": "get"},
        }
        if who.uid:
            spec["uid"] = who.uid
        if who.extra:
            spec["extra"] = {k: list(vs) for k, vs in who.extra}
        return bool(self._create(ACCESS_REVIEWS, {"spec": spec}).get("allowed"))

    def _create(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        try:
            out = self._client.create(res, body, timeout=REVIEW_TIMEOUT)
        except KubeError as exc:
            raise ReviewUnavailableError(f"{res.kind}: {exc}") from exc
        status: dict[str, Any] = out.get("status") or {}
        return status
