"""The simulated IAM's policy evaluation (atomic_gang_fakeaws.iam_eval) against the rules
AWS documents: the policy tests are only as honest as this."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_fakeaws.iam_eval import Context, Decision, UnknownOperatorError, evaluate
from atomic_gang_fakeaws.iam_launch import created_tags


def having(key: str, values: list[str] | None) -> Context:
    """A request whose only key is ``key`` (None: not even that one)."""
    return {key: values}.get if values is not None else nothing


def nothing(key: str) -> list[str] | None:
    return None


def allow(condition: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    st: dict[str, Any] = {"Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*", **extra}
    if condition:
        st["Condition"] = condition
    return {"Statement": [st]}


def decide(
    policy: dict[str, Any], context: Context | None = None, *, resource: str = "*"
) -> Decision:
    return evaluate([policy], "ec2:CreateTags", resource, context or nothing)


NOT_OURS = {"ForAllValues:StringNotEquals": {"aws:TagKeys": ["managed", "cluster"]}}


@pytest.mark.parametrize(
    ("keys", "decision"),
    [
        (None, Decision.ALLOW),  # no tags at all: ForAllValues holds over the empty set
        (["note"], Decision.ALLOW),
        (["note", "managed"], Decision.IMPLICIT_DENY),
        (["cluster"], Decision.IMPLICIT_DENY),
    ],
)
def test_for_all_values_string_not_equals_over_tag_keys(
    keys: list[str] | None, decision: Decision
) -> None:
    assert decide(allow(NOT_OURS), having("aws:TagKeys", keys)) is decision


def test_for_any_value_needs_one_match_and_is_false_when_absent() -> None:
    policy = allow({"ForAnyValue:StringEquals": {"aws:TagKeys": ["a", "b"]}})
    assert decide(policy, having("aws:TagKeys", ["x", "b"])) is Decision.ALLOW
    assert decide(policy, having("aws:TagKeys", ["x"])) is (Decision.IMPLICIT_DENY)
    assert decide(policy) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    ("operator", "present", "absent"),
    [
        ("StringEquals", Decision.ALLOW, Decision.IMPLICIT_DENY),
        ("StringNotEquals", Decision.IMPLICIT_DENY, Decision.ALLOW),  # negated: absent holds
        ("StringEqualsIfExists", Decision.ALLOW, Decision.ALLOW),
        ("StringLike", Decision.ALLOW, Decision.IMPLICIT_DENY),
    ],
)
def test_an_absent_key_fails_positive_operators_and_passes_negated_ones(
    operator: str, present: Decision, absent: Decision
) -> None:
    policy = allow(
        {operator: {"ec2:CreateAction": ["Run*" if "Like" in operator else "RunInstances"]}}
    )
    assert decide(policy, having("ec2:CreateAction", ["RunInstances"])) is present
    assert decide(policy) is absent


def test_a_failed_condition_makes_its_statement_silent_not_a_deny() -> None:
    """moto's own evaluator turns it into an explicit deny, so two Allow statements with
    different conditions deny each other there."""
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
             "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}}},
            {"Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
             "Condition": {"StringEquals": {"ec2:ResourceTag/managed": "true"}}},
        ]
    }  # fmt: skip
    assert decide(policy, having("ec2:ResourceTag/managed", ["true"])) is (Decision.ALLOW)


def test_an_explicit_deny_wins() -> None:
    policy = allow()
    policy["Statement"].append({"Effect": "Deny", "Action": "ec2:*", "Resource": "*"})
    assert decide(policy) is Decision.DENY


def test_not_resource_and_wildcards() -> None:
    policy = allow(Resource=None)
    policy["Statement"][0].pop("Resource")
    policy["Statement"][0]["NotResource"] = "arn:aws:ec2:*:*:placement-group/*"
    group = "arn:aws:ec2:us-east-1:1:placement-group/g"
    assert decide(policy, resource=group) is Decision.IMPLICIT_DENY
    assert decide(policy, resource="arn:aws:ec2:us-east-1:1:instance/i-1") is Decision.ALLOW
    # Actions match case-insensitively, with ? for one character.
    assert evaluate([allow()], "EC2:createtags", "*", nothing) is Decision.ALLOW
    one = {"Statement": [{"Effect": "Allow", "Action": "ec2:CreateTag?", "Resource": "*"}]}
    assert evaluate([one], "ec2:CreateTags", "*", nothing) is Decision.ALLOW


def test_null_checks_presence() -> None:
    policy = allow({"Null": {"aws:RequestTag/managed": "false"}})
    assert decide(policy, having("aws:RequestTag/managed", ["x"])) is (Decision.ALLOW)
    assert decide(policy) is Decision.IMPLICIT_DENY


def test_an_operator_it_does_not_simulate_is_an_error_not_a_pass() -> None:
    with pytest.raises(UnknownOperatorError, match="NumericLessThan"):
        decide(allow({"NumericLessThan": {"aws:MultiFactorAuthAge": "3600"}}))


def test_a_launch_creates_with_its_templates_tags_under_the_requests() -> None:
    """What ``aws:RequestTag`` holds for each resource a launch creates: a fleet's volumes
    and ENIs are tagged by its launch template, and the request's tags win per key."""
    template = {
        "TagSpecifications": [
            {"ResourceType": "volume", "Tags": [{"Key": "a", "Value": "lt"}, {"Key": "b"}]}
        ]
    }
    params = {
        "TagSpecification.1.ResourceType": "volume",
        "TagSpecification.1.Tag.1.Key": "a",
        "TagSpecification.1.Tag.1.Value": "request",
        "TagSpecification.2.ResourceType": "instance",
        "TagSpecification.2.Tag.1.Key": "c",
        "TagSpecification.2.Tag.1.Value": "x",
    }
    assert created_tags([template], params) == {
        "volume": {"a": "request", "b": ""},
        "instance": {"c": "x"},
    }
