"""``make build``'s wheel check, on archive listings (the real wheel is built and
checked by tests/integration/make)."""

from __future__ import annotations

import pytest

from atomic_gang_devstack.wheelcheck import PACKAGES, content_problems, script_problems

GOOD = [f"{p}/__init__.py" for p in PACKAGES] + [
    "atomic_gang_provisioner/main.py",
    "atomic_gang_provisioner-0.1.0.dist-info/METADATA",
    "atomic_gang_provisioner-0.1.0.dist-info/entry_points.txt",
]


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        pytest.param(GOOD, None, id="good"),
        pytest.param(GOOD[1:], "missing package atomic_gang", id="package-missing"),
        pytest.param([*GOOD, "tests/__init__.py"], "unexpected top-level entry tests", id="tests"),
        pytest.param(
            [*GOOD, "atomic_gang_fakeaws/__init__.py"],
            "unexpected top-level entry atomic_gang_fakeaws",
            id="simulator",
        ),
        pytest.param([*GOOD, "conftest.py"], "unexpected top-level file conftest.py", id="file"),
        pytest.param(
            [*GOOD, "atomic_gang/__pycache__/x.cpython-311.pyc"], "compiled file", id="pyc"
        ),
        pytest.param(
            [*GOOD, "other-1.0.dist-info/METADATA"], "expected one .dist-info", id="two-dists"
        ),
    ],
)
def test_content_problems(names: list[str], problem: str | None) -> None:
    found = content_problems(names)
    if problem is None:
        assert found == []
    else:
        assert any(problem in f for f in found), found


def test_every_console_script_must_be_declared() -> None:
    text = "[console_scripts]\natomic-gang = atomic_gang_cli.main:main\n"
    assert script_problems(text) == [
        "console script atomic-gang-provisioner not declared",
        "console script atomic-gang-webhook not declared",
    ]
