"""NOTES.txt: the verifying commands of docs/operations.md, and the warnings a risky install
must print."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.integration.chart.notes import (
    SPEC_VERIFY,
    missing_in_order,
    notes_chart,
    render_notes,
    spec_verify_lines,
)
from tests.integration.chart.render import REQUIRED, merge

CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "named-check": {"kueue": {"admissionCheck": {"name": "team-check"}}},
    "dev-url": {"webhook": {"devUrl": "https://127.0.0.1:18443"}},
    "ignore": {"webhook": {"failurePolicy": "Ignore"}},
    "no-webhook": {"webhook": {"enabled": False}},
    "ami-allowlist": {"allowedAmiIds": ["ami-0123456789abcdef0"]},
    "no-policy": {"gangNodePolicy": {"enabled": False}},
    "node-auth": {"auth": {"mode": "node"}},
    "irsa": {
        "auth": {"mode": "irsa"},
        "serviceAccount": {"roleArn": "arn:aws:iam::123456789012:role/ctl"},
    },
}


@pytest.fixture(scope="module")
def notes(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    chart = notes_chart(tmp_path_factory.mktemp("notes-chart"))
    with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
        futures = {
            name: pool.submit(render_notes, helm, chart, merge(REQUIRED, over))
            for name, over in CASES.items()
        }
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize(
    ("case", "check"),
    [
        pytest.param("default", "atomic-gang-check", id="default-check"),
        pytest.param("named-check", "team-check", id="named-check"),
    ],
)
def test_notes_carry_the_specs_verification_commands(
    notes: dict[str, str], case: str, check: str
) -> None:
    text = notes[case]

    assert missing_in_order(text, spec_verify_lines(check)) == []
    assert f"kubectl get admissioncheck {check} -o jsonpath=" in text


def test_a_renamed_check_is_not_verified_under_the_default_name(notes: dict[str, str]) -> None:
    assert "atomic-gang-check" not in notes["named-check"]
    assert missing_in_order(notes["named-check"], SPEC_VERIFY) != []


def test_the_order_check_sees_a_missing_or_moved_line() -> None:
    lines = spec_verify_lines("c")

    assert missing_in_order("\n".join(lines[1:]), lines) == [lines[0]]
    assert missing_in_order("\n".join([lines[0], *lines[2:], lines[1]]), lines) != []
    assert missing_in_order("\n".join(f"  {ln}" for ln in lines), lines) == lines


@pytest.mark.parametrize(
    ("case", "present", "absent"),
    [
        pytest.param(
            "default",
            "aws eks create-pod-identity-association --cluster-name my-eks-cluster",
            "WARNING: the validating webhook",
            id="pod-identity-association",
        ),
        pytest.param(
            "default",
            "WARNING: allowedAmiIds is empty, so ami-id is open",
            "gangNodePolicy is disabled",
            id="ami-open-warning",
        ),
        pytest.param(
            "ami-allowlist",
            "ValidatingAdmissionPolicy agp-gang-nodes (Deny)",
            "WARNING",
            id="ami-allowlist-quiet",
        ),
        pytest.param(
            "no-policy",
            "WARNING: gangNodePolicy is disabled",
            "ValidatingAdmissionPolicy agp-gang-nodes",
            id="no-policy-warning",
        ),
        pytest.param(
            "dev-url",
            "WARNING: webhook.devUrl is set (https://127.0.0.1:18443)",
            "failurePolicy is not Fail",
            id="dev-url-warning",
        ),
        pytest.param(
            "ignore",
            "WARNING: failurePolicy is not Fail",
            "webhook.devUrl is set",
            id="ignore-warning",
        ),
        pytest.param(
            "no-webhook",
            "WARNING: the validating webhook is disabled",
            "ValidatingWebhookConfiguration",
            id="no-webhook-warning",
        ),
        pytest.param("irsa", "auth.mode=irsa", "create-pod-identity-association", id="irsa"),
        pytest.param(
            "node-auth",
            "WARNING: auth.mode=node: the controller uses its node's instance role",
            "create-pod-identity-association",
            id="node-auth-warning",
        ),
        pytest.param("default", "auth.mode=podIdentity", "WARNING: auth.mode=node", id="quiet"),
    ],
)
def test_notes_say_what_the_values_imply(
    notes: dict[str, str], case: str, present: str, absent: str
) -> None:
    assert present in notes[case]
    assert absent not in notes[case]
