"""Hypothesis: any annotations either parse to a GangSpec or raise our error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from atomic_gang import GangSpec, GangValidationError, Violation, parse_gang
from atomic_gang import keys as k
from atomic_gang.errors import REASONS
from tests.support.jobs import settings as gang_settings

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
        assert 1 <= spec.count <= S.limits.maxGangSize
        assert spec.pool == labels[k.POOL].strip()
