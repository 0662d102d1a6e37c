"""aws-auth's mapRoles as EKS reads it: exact role ARN without its path, node groups."""

from __future__ import annotations

import pytest

from atomic_gang_provisioner.cloud.aws.access import mapped_groups, without_path

ROLE = "arn:aws:iam::123456789012:role/eks-gang-node-role"


@pytest.mark.parametrize(
    ("arn", "bare"),
    [
        pytest.param(ROLE, ROLE, id="no-path"),
        pytest.param(
            "arn:aws:iam::123456789012:role/team/ml/gang",
            "arn:aws:iam::123456789012:role/gang",
            id="path",
        ),
        pytest.param("not-an-arn", "not-an-arn", id="not-a-role"),
    ],
)
def test_without_path(arn: str, bare: str) -> None:
    assert without_path(arn) == bare


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        pytest.param(
            f"- rolearn: {ROLE}\n  groups: [system:bootstrappers, system:nodes]\n",
            frozenset({"system:bootstrappers", "system:nodes"}),
            id="mapped",
        ),
        pytest.param(
            f"- rolearn: {ROLE}\n  groups: [system:nodes]\n- rolearn: {ROLE}\n  groups: [x]\n",
            frozenset({"system:nodes", "x"}),
            id="two-rows-add-up",
        ),
        pytest.param(f"- rolearn: {ROLE}\n", frozenset(), id="mapped-without-groups"),
        pytest.param("- rolearn: arn:aws:iam::123456789012:role/other\n", None, id="other"),
        pytest.param("{not: a list}", None, id="not-a-list"),
        pytest.param("- [unclosed", None, id="not-yaml"),
        pytest.param("", None, id="empty"),
    ],
)
def test_mapped_groups(text: str, groups: frozenset[str] | None) -> None:
    assert mapped_groups(text, ROLE) == groups


def test_a_role_with_a_path_is_found_under_its_bare_arn() -> None:
    text = f"- rolearn: {ROLE}\n  groups: [system:nodes]\n"
    with_path = ROLE.replace(":role/", ":role/team/")
    assert mapped_groups(text, with_path) == frozenset({"system:nodes"})
    assert mapped_groups(text.replace(":role/", ":role/team/"), with_path) is None
