"""Errors the layer injects, serialised the way each AWS protocol does.

They subclass moto's ``_RESTError`` (a werkzeug HTTPException), so moto returns
them with their real HTTP status in-process and in server mode alike; 5xx ones
are what botocore and our engine treat as retryable. This module's name must
not start with ``moto`` (moto's serializer splits ``__module__`` on dots).
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape

from botocore.exceptions import ReadTimeoutError
from moto.core.exceptions import _RESTError

JSON_SERVICES = frozenset({"ssm", "eks"})


class AwsError(_RESTError):
    """An AWS error with a chosen code, message and HTTP status."""

    include_type_sender = False

    def __init__(self, code: str, message: str, *, status: int = 400, service: str = "ec2"):
        super().__init__(code, message)
        self.code = status
        self.error_code = code
        if service in JSON_SERVICES:
            self.description = json.dumps({"__type": code, "message": message})
            self.content_type = "application/json"
        elif service == "ec2":
            self.description = (
                "<?xml version='1.0' encoding='UTF-8'?>"
                f"<Response><Errors><Error><Code>{escape(code)}</Code>"
                f"<Message>{escape(message)}</Message></Error></Errors>"
                "<RequestID>fake-aws-request</RequestID></Response>"
            )

    def get_headers(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        return [("X-Amzn-ErrorType", self.error_code), ("Content-Type", self.content_type)]


def insufficient_capacity(instance_type: str, zone: str, *, detail: str = "") -> AwsError:
    return AwsError(
        "InsufficientInstanceCapacity",
        f"We currently do not have sufficient {instance_type} capacity in the Availability"
        f" Zone you requested ({zone}). Our system will be working on provisioning"
        " additional capacity." + (f" ({detail})" if detail else ""),
        status=500,
    )


def request_limit_exceeded() -> AwsError:
    return AwsError("RequestLimitExceeded", "Request limit exceeded.", status=503)


def idempotent_mismatch(token: str) -> AwsError:
    return AwsError(
        "IdempotentParameterMismatch",
        f"The client token {token} was already used with different parameters.",
    )


class LostResponseError(ReadTimeoutError):  # type: ignore[misc]
    """In-process stand-in for a response lost after the side effect happened."""

    def __init__(self, action: str) -> None:
        super().__init__(endpoint_url=f"fake-aws://{action} (response lost)")
