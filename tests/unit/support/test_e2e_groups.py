"""How the e2e tier is spread over xdist workers: each package one group, the real
node's tier and the image builds one group together, the longest groups first."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import FIRST, group_of


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        pytest.param("tests/e2e/system/test_faults.py::test_a[x]", "system", id="package"),
        pytest.param("tests/e2e/cluster/test_teardown.py::test_b", "host", id="node-tier"),
        pytest.param("tests/e2e/images/test_make_targets.py::test_c", "host", id="images"),
        pytest.param(
            "tests/e2e/kueue_contract/test_unserved.py::test_d[kueue-v0.18.3]",
            "kueue_contract",
            id="parametrized",
        ),
        pytest.param("tests/e2e/test_top.py::test_e", "e2e", id="top-level"),
        pytest.param(
            "tests/e2e/demo/test_stories.py::test_f",
            "tests/e2e/demo/test_stories.py::test_f",
            id="self-contained",
        ),
    ],
)
def test_each_package_is_one_group(nodeid: str, group: str) -> None:
    assert group_of(nodeid) == group


def test_the_first_groups_are_groups() -> None:
    assert "host" in FIRST
    assert len(set(FIRST)) == len(FIRST)
