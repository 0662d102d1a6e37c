"""One Kubernetes Event to emit, as both pure decisions (pool and Workload) return it.

``Event`` is a small typed value; the reconcilers hand it to the kube adapter's
recorder, which writes and aggregates it.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

EventType = Literal["Normal", "Warning"]


class Event(NamedTuple):
    type: EventType
    reason: str
    message: str


def event(reason: str, message: str, *, warning: bool = False) -> Event:
    return Event("Warning" if warning else "Normal", reason, message)
