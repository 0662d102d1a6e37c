"""Who reads /metrics: a token the apiserver accepts, for a user allowed get on /metrics;
verdicts kept a minute per token hash, in a bounded cache; an unanswered review is
never kept."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from atomic_gang_provisioner.metrics_access import (
    Identity,
    MetricsAccess,
    ReviewUnavailableError,
    Verdict,
    bearer_token,
)
from tests.support.clock import ManualClock

READER = Identity("system:serviceaccount:monitoring:prometheus", uid="u1", groups=("g",))
TENANT = Identity("system:serviceaccount:team-b:default")


@dataclass
class FakeReviewer:
    users: dict[str, Identity]
    readers: set[str]
    down: bool = False
    calls: list[str] = field(default_factory=list)

    def authenticate(self, token: str) -> Identity | None:
        self.calls.append(f"token:{token}")
        if self.down:
            raise ReviewUnavailableError("TokenReview: no answer")
        return self.users.get(token)

    def may_get(self, who: Identity, path: str) -> bool:
        self.calls.append(f"access:{who.username}:{path}")
        return who.username in self.readers


def access(
    reviewer: FakeReviewer, clock: ManualClock | None = None, size: int = 256
) -> MetricsAccess:
    return MetricsAccess(reviewer, clock=clock or ManualClock(), ttl=60.0, size=size)


@pytest.fixture
def reviewer() -> FakeReviewer:
    return FakeReviewer(users={"r": READER, "t": TENANT}, readers={READER.username})


@pytest.mark.parametrize(
    ("header", "verdict"),
    [
        (None, Verdict.NO_TOKEN),
        ("", Verdict.NO_TOKEN),
        ("Basic dTpw", Verdict.NO_TOKEN),
        ("Bearer ", Verdict.NO_TOKEN),
        ("Bearer nobody-knows-me", Verdict.NO_TOKEN),
        ("Bearer t", Verdict.FORBIDDEN),
        ("Bearer r", Verdict.ALLOWED),
        ("bearer r", Verdict.ALLOWED),
    ],
)
def test_each_header_gets_its_verdict(
    reviewer: FakeReviewer, header: str | None, verdict: Verdict
) -> None:
    assert access(reviewer).check(header) is verdict


def test_a_header_without_a_token_asks_the_apiserver_nothing(reviewer: FakeReviewer) -> None:
    gate = access(reviewer)
    for header in (None, "Basic x", "Bearer   "):
        gate.check(header)
    assert reviewer.calls == []


def test_the_access_review_names_the_metrics_path(reviewer: FakeReviewer) -> None:
    access(reviewer).check("Bearer r")
    assert reviewer.calls == ["token:r", f"access:{READER.username}:/metrics"]


def test_a_verdict_is_kept_for_its_ttl_then_asked_again(reviewer: FakeReviewer) -> None:
    clock = ManualClock()
    gate = access(reviewer, clock)
    assert gate.check("Bearer t") is Verdict.FORBIDDEN
    clock.advance(59.0)
    assert gate.check("Bearer t") is Verdict.FORBIDDEN
    assert len(reviewer.calls) == 2  # one TokenReview, one SubjectAccessReview
    reviewer.readers.add(TENANT.username)  # bound to the reader role meanwhile
    clock.advance(2.0)
    assert gate.check("Bearer t") is Verdict.ALLOWED
    assert len(reviewer.calls) == 4


def test_an_unanswered_review_is_503_and_not_kept(reviewer: FakeReviewer) -> None:
    gate = access(reviewer)
    reviewer.down = True
    assert gate.check("Bearer r") is Verdict.UNAVAILABLE
    reviewer.down = False
    assert gate.check("Bearer r") is Verdict.ALLOWED


def test_the_cache_holds_at_most_its_size_and_drops_the_oldest(reviewer: FakeReviewer) -> None:
    gate = access(reviewer, size=3)
    for i in range(10):
        gate.check(f"Bearer junk-{i}")
    assert len(gate._known) == 3
    reviewer.calls.clear()
    gate.check("Bearer junk-9")  # still kept
    gate.check("Bearer junk-0")  # dropped: asked again
    assert reviewer.calls == ["token:junk-0"]


def test_the_cache_keeps_hashes_never_tokens(reviewer: FakeReviewer) -> None:
    gate = access(reviewer)
    gate.check("Bearer r")
    assert all(key != "r" and len(key) == 64 for key in gate._known)


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("BEARER  abc ", "abc"), ("Bearerabc", None), ("abc", None)],
)
def test_bearer_token(header: str, token: str | None) -> None:
    assert bearer_token(header) == token
