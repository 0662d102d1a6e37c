"""values.schema.json makes a bad install fail at render time, naming the value."""

from __future__ import annotations

import pytest

from tests.integration.chart.conftest import NEGATIVE
from tests.integration.chart.render import Rendered

CASES = [pytest.param(name, needle, id=name) for name, (_, needle) in NEGATIVE.items()]


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
