"""Hypothesis: any annotations either parse to a GangSpec or raise our error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atomic_gang import GangSpec, GangValidationError, Violation, parse_gang
from atomic_gang import keys as k
from atomic_gang.errors import REASONS
from atomic_gang.job import review_job, validate_job
from atomic_gang.objects import MalformedJobError
from tests.support.jobs import gang_job
from tests.support.jobs import settings as gang_settings

# Coverage's tracer (CPython 3.11 has no sys.monitoring) makes a Hypothesis run about
# three times slower, and the example tests cover the same lines (all but ~11 of 5,300).
pytestmark = pytest.mark.no_cover

S = gang_settings()

_KEYS = st.one_of(
    st.sampled_from([*k.USER_KEYS, k.PREFIX + "cout", k.PREFIX, "other/key"]),
    st.text(max_size=30),
    st.text(max_size=20).map(lambda s: k.PREFIX + s),
)
_VALUES = st.one_of(
    st.sampled_from(
        [
            "4",
            "0",
            "-1",
            "p4d.24xlarge",
            "p5.48xlarge",
            "fleet",
            "runinstances",
            "us-east-1",
            "us-east-1a,us-east-1b",
            "subnet-0123456789abcdef0",
            "15m",
            "0s",
            "25h",
            "ami-0123456789abcdef0",
            "nvidia",
            "cr-01234567",
            "arn:aws:iam::123456789012:role/eks-gang-node-role",
            "",
            " ",
            "a" * 70,
        ]
    ),
    st.text(max_size=40),
)
_MAPS = st.dictionaries(_KEYS, _VALUES, max_size=12)


@settings(max_examples=400)
@given(annotations=_MAPS, labels=_MAPS)
def test_parse_yields_spec_or_our_error(
    annotations: dict[str, str], labels: dict[str, str]
) -> None:
    spec: GangSpec | None = None
    violations: tuple[Violation, ...] = ()
    try:
        spec = parse_gang(annotations, labels, S)
    except GangValidationError as err:
        violations = err.violations
    if spec is None:
        assert violations
        assert all(v.reason in REASONS for v in violations)
        assert all(v.key and v.message for v in violations)
    else:
        assert isinstance(spec, GangSpec)
        assert 1 <= spec.count <= S.limits.max_gang_size
        assert spec.pool == labels[k.POOL].strip()


_DIGITISH = st.sampled_from(["²", "4²", "①", "٤", "４", "1_0", " 4", "4\n", "+4", "04"])
_SPEC_INTS = st.one_of(st.none(), st.integers(min_value=-2, max_value=10))


@settings(max_examples=400)
@given(
    overrides=st.dictionaries(
        st.sampled_from(k.USER_KEYS), st.one_of(_VALUES, _DIGITISH), max_size=6
    ),
    parallelism=_SPEC_INTS,
    completions=_SPEC_INTS,
)
def test_whole_job_yields_a_verdict_or_our_error(
    overrides: dict[str, str], parallelism: int | None, completions: int | None
) -> None:
    """validate_job on a whole Job (what the webhook, the CLI and the
    provisioner run) never raise anything but our two errors: a Unicode digit in count
    once crashed the parity rule with a ValueError (an HTTP 500)."""
    job = gang_job(
        annotations={key: v for key, v in overrides.items() if key != k.POOL},
        labels={k.POOL: overrides[k.POOL]} if k.POOL in overrides else None,
        spec={"parallelism": parallelism, "completions": completions},
    )
    reasons: list[str] = []
    malformed = ""
    try:
        validate_job(job, S)
    except GangValidationError as err:
        reasons = [v.reason for v in err.violations] or ["<no violations>"]
    except MalformedJobError as err:
        malformed = str(err) or "empty message"
    assert all(r in REASONS for r in reasons)
    assert malformed != "empty message"
    # The webhook's exception-free path gives the same verdict, violation for violation.
    try:
        findings = review_job(job, S)
    except MalformedJobError:
        assert malformed
        return
    spec_or_error: object
    try:
        spec_or_error = validate_job(job, S)
    except GangValidationError as err:
        spec_or_error = list(err.violations)
    found = None if findings is None else list(findings.violations)
    if found is None:
        assert spec_or_error is None
    elif found:
        assert found == spec_or_error
    else:
        assert isinstance(spec_or_error, GangSpec)
