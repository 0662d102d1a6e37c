"""The apiserver's refusals the dev tools tell apart; anything else is a ``KubeError``."""

from __future__ import annotations


class KubeError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason = status, reason


class NotFoundError(KubeError):
    pass


class AlreadyExistsError(KubeError):
    pass


class ConflictError(KubeError):
    """A write carrying a stale resourceVersion (or a failed precondition)."""


def error_from_status(status: int, body: dict[str, object]) -> KubeError:
    """The error for an apiserver ``Status`` answer (``reason`` tells a 409 apart)."""
    reason, message = str(body.get("reason", "")), str(body.get("message", ""))
    if status == 404:
        return NotFoundError(status, reason, message)
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExistsError(status, reason, message)
    if status == 409:
        return ConflictError(status, reason, message)
    return KubeError(status, reason, message)
