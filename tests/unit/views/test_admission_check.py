"""The AdmissionCheck view: controllerName, parameters, generation and conditions."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.views.admission_check import AdmissionCheck


def test_reads_a_whole_check() -> None:
    check = AdmissionCheck(
        {
            "metadata": {"name": "gang", "generation": 4},
            "spec": {
                "controllerName": "atomic-gang.k8s.aws/provisioner",
                "parameters": {"apiGroup": "x", "kind": "Y", "name": "z"},
            },
            "status": {
                "conditions": [
                    {"type": "Other", "status": "True"},
                    {"type": "Active", "status": "False", "reason": "CloudUnavailable"},
                ]
            },
        }
    )
    assert check.name == "gang"
    assert check.generation == 4
    assert check.controller_name == "atomic-gang.k8s.aws/provisioner"
    assert check.parameters == {"apiGroup": "x", "kind": "Y", "name": "z"}
    active = check.condition("Active")
    assert active is not None
    assert active["reason"] == "CloudUnavailable"
    assert check.condition("Missing") is None


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"spec": None, "status": None},
        {"spec": {"parameters": None}, "status": {"conditions": None}},
    ],
    ids=["bare", "null-sections", "null-fields"],
)
def test_a_check_not_filled_in(raw: dict[str, Any]) -> None:
    check = AdmissionCheck(raw)
    assert check.controller_name is None
    assert not check.parameters
    assert check.generation == 0
    assert list(check.conditions) == []
    assert check.condition("Active") is None
