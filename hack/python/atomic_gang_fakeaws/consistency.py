"""EC2's eventual consistency, as a fault: a ``stale_read`` rule on DescribeInstances.

EC2 documents its API as eventually consistent: right after RunInstances, a
DescribeInstances may not show the new instances yet, and a describe filtered by tag
(how the controller looks a set up by its pool and generation) lags the most. With a
rule ``{"action": "DescribeInstances", "effect": "stale_read", "seconds": S}`` active,
a describe with a ``tag:`` filter omits every instance launched less than ``S`` seconds
ago by the layer's wall clock; a describe by instance id is answered as usual.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.ec2.models.instances import InstanceBackend

from atomic_gang_fakeaws.dispatch import current_rule
from atomic_gang_fakeaws.state import active

_ORIGINAL = InstanceBackend.describe_instances


def _by_tag(filters: Any) -> bool:
    return isinstance(filters, dict) and any(str(k).startswith("tag:") for k in filters)


def _launched(instance: Any) -> datetime:
    at: datetime = instance.launch_time
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def describe_instances(self: Any, filters: Any = None) -> list[Any]:
    found: list[Any] = _ORIGINAL(self, filters)
    rule, state = current_rule(), active()
    if rule is None or rule.effect != "stale_read" or state is None or not _by_tag(filters):
        return found
    cutoff = state.wall() - timedelta(seconds=rule.seconds)
    out = []
    for reservation in found:
        seen = [i for i in reservation.instances if _launched(i) <= cutoff]
        if len(seen) == len(reservation.instances):
            out.append(reservation)
        elif seen:
            partial = copy.copy(reservation)  # never touch moto's own record
            partial.instances = seen
            out.append(partial)
    return out


PATCHES: list[tuple[Any, str, Any]] = [(InstanceBackend, "describe_instances", describe_instances)]
