"""Release: terminate a gang without leaking ENIs.

1. Record secondary ENIs attached to the instances with DeleteOnTermination
   false, and VPC CNI ENIs found by their exact ``aws-K8S-<instance-id>``
   description (this is how a retry recovers ENIs that already detached); of
   those, only the ones the controller policy lets us delete: tagged by our
   launches (managed and this cluster) or by the VPC CNI for this cluster
   (``cluster.k8s.amazonaws.com/name``). Anyone else's ENI is left alone.
2. Delete any fleet (with its instances, even ones a malformed answer hid),
   then terminate the instances.
3. Wait (injected sleeper) for the recorded ENIs to detach, then delete them.
ENIs still attached at the deadline are returned as pending; calling again
with them is safe, as is releasing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.cloud import naming
from atomic_gang_provisioner.cloud.aws import parse
from atomic_gang_provisioner.cloud.aws.batch import chunks
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.inventory import FILTER_VALUES, Inventory
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.retry import Sleeper
from atomic_gang_provisioner.cloud.values import ReleaseRequest, ReleaseResult

CNI_PREFIX = "aws-K8S-"
CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"  # the VPC CNI's tag on the ENIs it creates


def deletable(eni: dict[str, Any], cluster: str) -> bool:
    """An ENI the controller policy lets us delete (DeleteOurInterfaces, DeleteVpcCniInterfaces)."""
    tags = parse.tags_of(eni.get("TagSet"))
    ours = naming.cluster_tags(cluster=cluster)
    return tags.get(CNI_CLUSTER_TAG) == cluster or all(tags.get(k) == v for k, v in ours.items())


class Releaser:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        cluster: str,
        inventory: Inventory,
        sleeper: Sleeper,
        monotonic: Callable[[], float],
        wait_seconds: float,
        poll_seconds: float,
    ) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._cluster = cluster
        self._inv = inventory
        self._sleep = sleeper
        self._now = monotonic
        self._wait = wait_seconds
        self._poll = poll_seconds

    def _enis(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(
            self._caller.pages(
                self._ec2, "describe_network_interfaces", "NetworkInterfaces", Filters=filters
            )
        )

    def record(self, instance_ids: Sequence[str]) -> set[str]:
        """ENIs we must delete ourselves after termination."""
        found: list[dict[str, Any]] = []
        for ids in chunks(sorted(set(instance_ids)), FILTER_VALUES):  # filter-value limit
            attached = self._enis([{"Name": "attachment.instance-id", "Values": ids}])
            found += [
                e
                for e in attached
                if e.get("Attachment", {}).get("DeviceIndex", 0) != 0
                and not e.get("Attachment", {}).get("DeleteOnTermination", False)
            ]
            described = [CNI_PREFIX + i for i in ids]
            found += self._enis([{"Name": "description", "Values": described}])
        return {e["NetworkInterfaceId"] for e in found if deletable(e, self._cluster)}

    def recover(self, ended_ids: Sequence[str]) -> set[str]:
        """What ``record`` finds for instances already ended, plus detached ENIs that
        carry our tags: only our launches tag ENIs, and they never detach one from a
        live instance, so such an ENI is a leftover."""
        tagged = self._enis(
            [
                {"Name": f"tag:{keys.MANAGED}", "Values": ["true"]},
                {"Name": f"tag:{keys.CLUSTER}", "Values": [self._cluster]},
                {"Name": "status", "Values": ["available"]},
            ]
        )
        return {e["NetworkInterfaceId"] for e in tagged} | self.record(ended_ids)

    def release(self, request: ReleaseRequest) -> ReleaseResult:
        enis = set(request.enis)
        try:
            enis |= self.record(request.instance_ids)
            if request.fleet_ids:
                self._inv.delete_fleets(request.fleet_ids)
            terminated = self._inv.terminate(request.instance_ids) if request.instance_ids else ()
            deleted, pending = self._delete_when_detached(enis)
        except CloudError as err:
            # Hand back every ENI we know of, so the next attempt still deletes them.
            return ReleaseResult(
                pending_enis=tuple(sorted(enis)), reason=err.reason, message=str(err)
            )
        return ReleaseResult(
            terminated=terminated, deleted_enis=tuple(deleted), pending_enis=tuple(pending)
        )

    def _delete_when_detached(self, enis: set[str]) -> tuple[list[str], list[str]]:
        deleted: list[str] = []
        pending = set(enis)
        deadline = self._now() + self._wait
        while pending:
            state = {
                e["NetworkInterfaceId"]: e.get("Status", "")
                for e in self._enis([{"Name": "network-interface-id", "Values": sorted(pending)}])
            }
            pending &= set(state)  # gone already: deleted with the instance
            for eni in sorted(e for e in pending if state[e] == "available"):
                self._delete(eni)
                deleted.append(eni)
                pending.discard(eni)
            if not pending or self._now() >= deadline:
                break
            self._sleep(self._poll)
        return deleted, sorted(pending)

    def _delete(self, eni: str) -> None:
        try:
            self._caller.call(self._ec2, "delete_network_interface", NetworkInterfaceId=eni)
        except CloudError as err:
            if err.kind != "not_found":
                raise
