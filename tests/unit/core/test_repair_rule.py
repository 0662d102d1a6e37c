"""The repair annotation: auto (default) or never, not part of the shape; a bad value is
denied naming the field, the value and the choices."""

from __future__ import annotations

import pytest

from atomic_gang import GangValidationError, validate_job
from atomic_gang import keys as k
from tests.support.jobs import gang_job, settings


def test_repair_defaults_to_auto() -> None:
    spec = validate_job(gang_job(), settings())
    assert spec is not None
    assert spec.repair == "auto"


@pytest.mark.parametrize("value", ["auto", "never"])
def test_repair_takes_auto_or_never_and_leaves_the_shape_alone(value: str) -> None:
    spec = validate_job(gang_job(annotations={k.REPAIR: value}), settings())
    plain = validate_job(gang_job(), settings())
    assert spec is not None
    assert plain is not None
    assert spec.repair == value
    assert spec.shape_equals(plain)  # a Job that opts out reuses the same warm set


def test_a_bad_repair_value_names_the_field_the_value_and_the_choices() -> None:
    with pytest.raises(GangValidationError) as caught:
        validate_job(gang_job(annotations={k.REPAIR: "sometimes"}), settings())
    (v,) = caught.value.violations
    assert (v.key, v.reason, v.value) == (k.REPAIR, "InvalidRepair", "sometimes")
    assert "auto, never" in str(caught.value)
