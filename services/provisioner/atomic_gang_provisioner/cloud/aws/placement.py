"""The pool's cluster placement group: created before its first launch, adopted after a
crash, reused across generations, deleted once its last instance is gone.

The name is derived from (cluster, pool), so a restarted controller finds the same
group: ``InvalidPlacementGroup.Duplicate`` on create means it exists, and it is
adopted only if its tags say it is this cluster's, this pool's and ours, and its
strategy is ``cluster``. ``InvalidPlacementGroup.InUse`` on delete means
instances are still in it (terminated ones linger): not an error, ask again later.
A group named by ``placement-group-name`` is the user's: never created or deleted.
"""

from __future__ import annotations

from typing import Any

from atomic_gang import GangSpec, keys
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws import parse
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.reservation_fit import Reservation
from atomic_gang_provisioner.cloud.values import PlacementGroup

DUPLICATE = "InvalidPlacementGroup.Duplicate"
IN_USE = "InvalidPlacementGroup.InUse"
UNKNOWN = "InvalidPlacementGroup.Unknown"
STRATEGY = "cluster"


class PlacementGroups:
    def __init__(self, *, clients: AwsClients, caller: Caller, cluster: str) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._cluster = cluster
        self._known: set[str] = set()  # created or adopted by this process

    def _call(self, op: str, **params: Any) -> dict[str, Any]:
        return self._caller.call(self._ec2, op, **params)

    def name_for(self, pool: str) -> str:
        return naming.placement_group_name(cluster=self._cluster, pool=pool)

    def for_launch(self, spec: GangSpec, reservation: Reservation | None = None) -> str | None:
        """The group the gang goes into: its reservation's (the capacity is in there), the
        user's, the pool's own, or none. Called last of the checks before a launch, as it
        may create the group: that bills nothing, but counts against the region's 500."""
        if reservation is not None and reservation.placement_group_name:
            # cloud.reservations judged a different placement-group-name unfit already
            return reservation.placement_group_name
        if spec.placement_group_name:
            return spec.placement_group_name
        if spec.placement == STRATEGY:
            return self.ensure(spec.pool)
        return None

    def ensure(self, pool: str) -> str:
        name = self.name_for(pool)
        if name in self._known:
            return name
        tags = naming.ownership_tags(cluster=self._cluster, pool=pool)
        try:
            self._call(
                "create_placement_group",
                GroupName=name,
                Strategy=STRATEGY,
                TagSpecifications=parse.tag_specs(["placement-group"], tags),
            )
        except CloudError as err:
            if err.code != DUPLICATE:
                raise
            self._adopt(name, pool)
        self._known.add(name)
        return name

    def _adopt(self, name: str, pool: str) -> None:
        """Ours from before a restart (or another replica's), or someone else's."""
        try:
            found = self._call("describe_placement_groups", GroupNames=[name])["PlacementGroups"]
        except CloudError as err:
            if err.code != UNKNOWN:
                raise
            found = []
        if not found:  # deleted between the two calls (a reaper sweep): the next try makes it
            raise CloudError(
                "PlacementGroupGone", f"placement group {name} vanished; retrying", http_status=503
            )
        group = found[0]
        tags = parse.tags_of(group.get("Tags"))
        want = naming.ownership_tags(cluster=self._cluster, pool=pool)
        wrong = [f"tag {k}={tags.get(k)!r}" for k, v in sorted(want.items()) if tags.get(k) != v]
        if group.get("Strategy") != STRATEGY:
            wrong.append(f"strategy {group.get('Strategy')!r}")
        if wrong:
            raise CloudError(
                "PlacementGroupConflict",
                f"placement group {name} exists but is not pool {pool}'s of cluster"
                f" {self._cluster} ({', '.join(wrong)}, want {STRATEGY} and our tags)",
            )
        if group.get("State") in ("deleting", "deleted"):
            raise CloudError(
                "PlacementGroupGone", f"placement group {name} is being deleted", http_status=503
            )

    def forget(self, pool: str) -> None:
        self._known.discard(self.name_for(pool))

    def delete(self, name: str) -> bool:
        """True once the group is gone; False while instances are still in it."""
        try:
            self._call("delete_placement_group", GroupName=name)
        except CloudError as err:
            if err.code == IN_USE:
                return False
            if err.code != UNKNOWN:
                raise
        self._known.discard(name)
        return True

    def list_owned(self) -> tuple[PlacementGroup, ...]:
        """This cluster's managed groups (DescribePlacementGroups has no pages)."""
        found = self._call(
            "describe_placement_groups",
            Filters=[
                {"Name": f"tag:{keys.MANAGED}", "Values": ["true"]},
                {"Name": f"tag:{keys.CLUSTER}", "Values": [self._cluster]},
            ],
        )["PlacementGroups"]
        return tuple(
            PlacementGroup(
                name=str(g["GroupName"]),
                strategy=str(g.get("Strategy", "")),
                pool=parse.tags_of(g.get("Tags")).get(keys.POOL),
                state=str(g.get("State", "")),
            )
            for g in found
        )
