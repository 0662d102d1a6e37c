"""Reading and stamping instances: describe, the group lookup, the reaper
listing, tags and plain termination.

Describe by ids, terminate and tag go through the batches (``batch.py``): the
requests of every pool that asks within a short window share one call, and an
id EC2 has forgotten is just absent from its caller's answer. The reaper listing
is one paginated DescribeInstances filtered server-side by our tags. A join check
(``reuse``) takes a recent enough answer another pool's call got (``observed.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.cloud.aws import parse
from atomic_gang_provisioner.cloud.aws.batch import Ec2Batches, chunks
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import LIVE_STATES, Instance

PAGE = 1000
ENDED_STATES = ("shutting-down", "terminated")
FILTER_VALUES = 200


class Inventory:
    def __init__(
        self, *, clients: AwsClients, caller: Caller, cluster: str, batches: Ec2Batches
    ) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._cluster = cluster
        self._batches = batches

    def _describe(self, filters: list[dict[str, Any]]) -> list[Instance]:
        reservations = self._caller.pages(
            self._ec2, "describe_instances", "Reservations", Filters=filters, MaxResults=PAGE
        )
        return parse.instances_of_reservations(reservations)

    def describe(self, instance_ids: Sequence[str]) -> tuple[Instance, ...]:
        return self.describe_later(instance_ids).result()

    def describe_later(
        self, instance_ids: Sequence[str], *, also: Sequence[str] = (), reuse: bool = False
    ) -> Future[tuple[Instance, ...]]:
        ids = tuple(sorted(set(instance_ids)))
        recent = self._batches.seen.recent(ids) if reuse else None
        if recent is None:
            return self._batches.describe.submit((ids, tuple(also)))
        done: Future[tuple[Instance, ...]] = Future()
        done.set_result(recent)
        return done

    def reported_unhealthy(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        return self._batches.seen.unhealthy(instance_ids)

    def _owned_filters(self, states: Sequence[str] = tuple(LIVE_STATES)) -> list[dict[str, Any]]:
        return [
            {"Name": f"tag:{keys.MANAGED}", "Values": ["true"]},
            {"Name": f"tag:{keys.CLUSTER}", "Values": [self._cluster]},
            {"Name": "instance-state-name", "Values": sorted(states)},
        ]

    def list_ended(self) -> tuple[Instance, ...]:
        """This cluster's managed instances shutting down or terminated (EC2 keeps
        terminated ones listed for about an hour)."""
        return tuple(self._describe(self._owned_filters(ENDED_STATES)))

    def find_group(self, *, pool: str, generation: int) -> tuple[Instance, ...]:
        """Live instances of one (pool, generation): adoption after a crash."""
        filters = [
            *self._owned_filters(),
            {"Name": f"tag:{keys.POOL}", "Values": [pool]},
            {"Name": f"tag:{keys.GENERATION}", "Values": [str(generation)]},
        ]
        return tuple(self._describe(filters))

    def list_owned(self) -> tuple[Instance, ...]:
        return tuple(self._describe(self._owned_filters()))

    def tag(self, instance_ids: Sequence[str], tags: Mapping[str, str]) -> None:
        self._batches.tag.call((tuple(instance_ids), tuple(sorted(tags.items()))))

    def terminate(self, instance_ids: Sequence[str]) -> tuple[str, ...]:
        """Terminate; ids EC2 no longer knows are dropped and the rest retried."""
        ids = sorted(set(instance_ids))
        try:
            self._terminate(ids)
        except CloudError as err:
            if err.kind != "not_found":
                raise
            ids = sorted(i.instance_id for i in self.describe(ids) if i.state != "terminated")
            self._terminate(ids)
        return tuple(ids)

    def _terminate(self, ids: list[str]) -> None:
        if ids:
            self._batches.terminate.call(tuple(ids))

    def delete_fleets(self, fleet_ids: Sequence[str]) -> None:
        for chunk in chunks(sorted(set(fleet_ids)), 25):
            self._caller.call(self._ec2, "delete_fleets", FleetIds=chunk, TerminateInstances=True)
