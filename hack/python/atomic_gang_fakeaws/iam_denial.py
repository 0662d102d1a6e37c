"""How a refused call reads, per service, as AWS words it.

EC2 answers ``UnauthorizedOperation`` (403) naming the principal, the action and the one
resource that was refused, plus an encoded authorization failure message. On AWS that is
opaque until ``sts:DecodeAuthorizationMessage``; here it is base64 of the same JSON
document that call returns (``allowed``, ``explicitDeny``, ``context`` with the action,
the resource and the condition keys of the request), so :func:`decoded` can read it. SSM
answers ``AccessDeniedException`` (400) with the same first sentence; other services keep
moto's own ``AccessDenied``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from atomic_gang_fakeaws.errors import AwsError

ENCODED = re.compile(r"Encoded authorization failure message: ([A-Za-z0-9_=-]+)")


def reason(principal: str, action: str, resource: str, *, explicit: bool) -> str:
    why = (
        "with an explicit deny in an identity-based policy"
        if explicit
        else f"because no identity-based policy allows the {action} action"
    )
    return f"User: {principal} is not authorized to perform: {action} on resource: {resource} {why}"


def encoded(
    principal: str, action: str, resource: str, context: Mapping[str, list[str]], *, explicit: bool
) -> str:
    doc = {
        "allowed": False,
        "explicitDeny": explicit,
        "matchedStatements": {"items": []},
        "failures": {"items": []},
        "context": {
            "principal": {"arn": principal},
            "action": action,
            "resource": resource,
            "conditions": {
                "items": [
                    {"key": key, "values": {"items": [{"value": v} for v in values]}}
                    for key, values in sorted(context.items())
                ]
            },
        },
    }
    return base64.urlsafe_b64encode(json.dumps(doc, sort_keys=True).encode()).decode()


def unauthorized(
    principal: str, action: str, resource: str, context: Mapping[str, list[str]], *, explicit: bool
) -> AwsError:
    """EC2's refusal of one resource of a call."""
    blob = encoded(principal, action, resource, context, explicit=explicit)
    return AwsError(
        "UnauthorizedOperation",
        "You are not authorized to perform this operation. "
        f"{reason(principal, action, resource, explicit=explicit)}. "
        f"Encoded authorization failure message: {blob}",
        status=403,
    )


def access_denied_exception(
    principal: str, action: str, resource: str, *, explicit: bool
) -> AwsError:
    """The JSON services' refusal (SSM)."""
    text = reason(principal, action, resource, explicit=explicit)
    return AwsError("AccessDeniedException", text, status=400, service="ssm")


def decoded(message: str) -> dict[str, Any]:
    """The decoded document of an ``UnauthorizedOperation`` message from the layer."""
    found = ENCODED.search(message)
    if found is None:
        raise ValueError(f"no encoded authorization failure message in {message!r}")
    doc: dict[str, Any] = json.loads(base64.urlsafe_b64decode(found.group(1)))
    return doc
