"""values.schema.json makes a bad install fail at render time, naming the value."""

from __future__ import annotations

import pytest

from tests.integration.chart.conftest import NEGATIVE, REFUSED
from tests.integration.chart.render import Rendered

CASES = [pytest.param(name, needle, id=name) for name, (_, needle) in NEGATIVE.items()]
REFUSALS = [pytest.param(name, needle, id=name) for name, (_, needle) in REFUSED.items()]


@pytest.mark.parametrize(("case", "needle"), CASES)
def test_render_fails_closed(renders: dict[str, Rendered], case: str, needle: str) -> None:
    r = renders[f"bad:{case}"]

    assert r.returncode != 0
    assert r.objects == ()
    assert "values don't meet the specifications of the schema" in r.stderr
    assert needle in r.stderr, r.stderr


def test_the_chart_defaults_alone_do_not_render(helm_defaults: Rendered) -> None:
    # clusterName, defaults.region and the ClusterQueue quota have no usable default.
    assert helm_defaults.returncode != 0
    for needle in ("/clusterName", "/defaults/region", "'cpu', 'memory'"):
        assert needle in helm_defaults.stderr


@pytest.mark.parametrize(("case", "needle"), REFUSALS)
def test_render_refuses_values_both_services_would_refuse(
    renders: dict[str, Rendered], case: str, needle: str
) -> None:
    """A rule across values (not expressible in the schema) that the settings model
    also enforces at start-up: failing at install beats a crash-looping pod."""
    r = renders[f"refused:{case}"]

    assert r.returncode != 0
    assert r.objects == ()
    assert needle in r.stderr, r.stderr
