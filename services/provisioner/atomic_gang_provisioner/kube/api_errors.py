"""Typed API errors: callers catch these, never the official client's ApiException.

``error_from_response`` reads the apiserver's ``Status`` body (reason, message,
details) so a 409 from a stale resourceVersion (``ConflictError``) is told apart from
a 409 on create (``AlreadyExistsError``). ``retryable`` marks what is worth a retry.
"""

from __future__ import annotations

from typing import Any

import orjson


class KubeError(Exception):
    """An apiserver answer that is not a success, or no answer at all."""

    status: int = 0
    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        if status is not None:
            self.status = status


class TransportError(KubeError):
    """No HTTP answer: connection refused or reset, TLS failure, timeout."""

    retryable = True


class BadRequestError(KubeError):
    status = 400


class UnauthorizedError(KubeError):
    status = 401


class ForbiddenError(KubeError):
    status = 403


class NotFoundError(KubeError):
    status = 404


class ConflictError(KubeError):
    """409: stale resourceVersion, failed precondition, or a field-manager conflict."""

    status = 409


class AlreadyExistsError(KubeError):
    """409 on create: the name is taken."""

    status = 409


class GoneError(KubeError):
    """410: the resourceVersion (or a list continue token) has been compacted away."""

    status = 410


class InvalidError(KubeError):
    """422: the object failed validation (schema, CEL rules, immutable fields)."""

    status = 422


class TooManyRequestsError(KubeError):
    status = 429
    retryable = True


class ServerError(KubeError):
    """5xx, including 504 timeouts and an apiserver shutting down."""

    status = 500
    retryable = True


_BY_STATUS: dict[int, type[KubeError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def error_from_status(status: int, body: dict[str, Any] | None) -> KubeError:
    """The typed error for an HTTP status and a decoded ``Status`` object (if any)."""
    body = body or {}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or f"HTTP {status}")
    if status == 409 and reason == "AlreadyExists":
        cls: type[KubeError] = AlreadyExistsError
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, KubeError)
    return cls(message, status=status, reason=reason)


def error_from_response(status: int, data: bytes) -> KubeError:
    try:
        decoded = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        decoded = None
    body = (
        decoded if isinstance(decoded, dict) else {"message": data[:500].decode(errors="replace")}
    )
    return error_from_status(status, body)


class KubeConfigError(Exception):
    """No usable kubeconfig or in-cluster configuration (a start-up error, not a call)."""
