"""IAM's evaluation of identity policies, as AWS documents it, for the simulated EC2.

moto's evaluator (5.2) knows one condition operator (``StringEquals``), no
``NotResource``, no set qualifiers, and turns a statement whose condition does not hold
into an explicit *deny*, so two Allow statements with different conditions deny each
other. Here, as in AWS:

* a statement applies when its action, its resource and every condition match; an
  explicit Deny that applies wins, else an Allow that applies allows, else the request
  is implicitly denied;
* ``Action``/``NotAction``, ``Resource``/``NotResource`` with ``*`` and ``?`` wildcards
  (actions case-insensitive);
* operators ``String{Equals,NotEquals,EqualsIgnoreCase,Like,NotLike}``,
  ``Arn{Equals,Like,NotEquals,NotLike}``, ``Bool`` and ``Null``, each with ``IfExists``,
  and the set qualifiers ``ForAllValues:`` / ``ForAnyValue:`` over multivalued keys
  (``aws:TagKeys``);
* a key absent from the request: a positive operator is false, a negated one
  (``StringNotEquals``, ``StringNotLike``, ``ArnNot…``) true, ``…IfExists`` true,
  ``ForAllValues`` true, ``ForAnyValue`` false; several keys in one operator and several
  operators all must hold; several values of one key: any (positive) or none (negated).

An operator this module does not know raises, so a policy never passes a test by an
operator being ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

Context = Callable[[str], list[str] | None]  # a key's values in the request; None: absent


class Decision(Enum):
    ALLOW = "allow"
    DENY = "deny"  # an explicit Deny applies
    IMPLICIT_DENY = "implicit"  # no Allow applies


class UnknownOperatorError(ValueError):
    """A condition operator the simulated IAM does not implement."""


def evaluate(
    policies: Iterable[str | Mapping[str, Any]], action: str, resource: str, context: Context
) -> Decision:
    allowed = False
    for policy in policies:
        doc = json.loads(policy) if isinstance(policy, str) else policy
        statements = doc.get("Statement", [])
        for st in [statements] if isinstance(statements, dict) else statements:
            if not _applies(st, action, resource, context):
                continue
            if st.get("Effect") == "Deny":
                return Decision.DENY
            allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def _applies(st: Mapping[str, Any], action: str, resource: str, context: Context) -> bool:
    if "NotAction" in st:
        if _any_match(st["NotAction"], action, fold=True):
            return False
    elif not _any_match(st.get("Action", []), action, fold=True):
        return False
    if "NotResource" in st:
        if _any_match(st["NotResource"], resource):
            return False
    elif "Resource" in st and not _any_match(st["Resource"], resource):
        return False
    return all(
        _holds(op, key, values, context)
        for op, block in (st.get("Condition") or {}).items()
        for key, values in block.items()
    )


def _any_match(patterns: str | list[str], value: str, *, fold: bool = False) -> bool:
    return any(_like(p, value, fold=fold) for p in _listed(patterns))


def _listed(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _like(pattern: str, value: str, *, fold: bool = False) -> bool:
    """IAM's glob: ``*`` any run, ``?`` one character, nothing else special."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE if fold else 0) is not None


NEGATED = {"StringNotEquals", "StringNotEqualsIgnoreCase", "StringNotLike", "ArnNotEquals",
           "ArnNotLike"}  # fmt: skip
MATCHERS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda p, v: p == v,
    "StringNotEquals": lambda p, v: p == v,
    "StringEqualsIgnoreCase": lambda p, v: p.lower() == v.lower(),
    "StringNotEqualsIgnoreCase": lambda p, v: p.lower() == v.lower(),
    "StringLike": _like,
    "StringNotLike": _like,
    "ArnEquals": lambda p, v: p == v,
    "ArnNotEquals": lambda p, v: p == v,
    "ArnLike": _like,
    "ArnNotLike": _like,
    "Bool": lambda p, v: p.lower() == v.lower(),
}


def _holds(operator: str, key: str, policy_values: Any, context: Context) -> bool:
    qualifier, _, op = operator.rpartition(":")
    if_exists = op.endswith("IfExists")
    op = op.removesuffix("IfExists")
    wanted = _listed(policy_values)
    found = context(key)
    if op == "Null":
        absent = not found
        return all((w.lower() == "true") == absent for w in wanted)
    if op not in MATCHERS:
        raise UnknownOperatorError(f"condition operator {operator!r} is not simulated")
    negated = op in NEGATED

    def one(value: str) -> bool:
        hit = any(MATCHERS[op](w, value) for w in wanted)
        return not hit if negated else hit

    if qualifier == "ForAllValues":
        return all(one(v) for v in found or [])
    if qualifier == "ForAnyValue":
        return any(one(v) for v in found or [])
    if qualifier:
        raise UnknownOperatorError(f"condition qualifier {qualifier!r} is not simulated")
    if not found:
        return if_exists or negated
    return one(found[0]) if len(found) == 1 else all(one(v) for v in found)
