"""What the simulator reads from (and does to) the simulated EC2, through boto3.

Kept cheap. With the fake layer's control API (``states``), a tick asks it for the
states of our cluster's managed instances (kubelets call no EC2 API, so the
simulator should not load moto for them: a DescribeInstances of 800 instances
costs moto seconds) and describes only the instances it has not seen; without
it, one filtered DescribeInstances per tick (managed tag, this cluster, pending or
running; ``MaxResults=1000`` so moto, which pages by reservation, answers in one
page). User data only for instances not seen before, instance types and the
cluster's join parameters once each.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import boto3

from atomic_gang_nodesim.nodes import CLUSTER_TAG, MANAGED_TAG, Instance

LIVE = ("pending", "running")
States = Callable[[dict[str, str]], dict[str, str]]  # tags -> {instance id: state}


@dataclass(frozen=True, slots=True)
class ClusterJoin:
    """What EKS says a node must be told: the endpoint and the CA (base64 PEM)."""

    endpoint: str
    certificate_authority: str


@dataclass
class Ec2View:
    ec2: Any
    eks: Any
    iam: Any
    cluster: str
    states: States | None = None
    _types: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    _join: ClusterJoin | None = None
    _known: dict[str, Instance] = field(default_factory=dict)

    def live(self) -> list[Instance]:
        """Managed instances of our cluster that are pending or running."""
        if self.states is None:
            return self._described_live()
        states = self.states({MANAGED_TAG: "true", CLUSTER_TAG: self.cluster})
        live = [i for i, state in states.items() if state in LIVE]
        self._known = {i: inst for i, inst in self._known.items() if i in states}
        new = [i for i in live if i not in self._known]
        for start in range(0, len(new), 200):
            page = self.ec2.describe_instances(InstanceIds=new[start : start + 200])
            for res in page.get("Reservations", []):
                for raw in res.get("Instances", []):
                    inst = Instance.from_describe(raw)
                    self._known[inst.instance_id] = inst
        return [replace(self._known[i], state=states[i]) for i in live if i in self._known]

    def _described_live(self) -> list[Instance]:
        """One filtered DescribeInstances per page."""
        filters = [
            {"Name": f"tag:{MANAGED_TAG}", "Values": ["true"]},
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
        out: list[Instance] = []
        token = ""
        while True:
            extra = {"NextToken": token} if token else {}
            page = self.ec2.describe_instances(Filters=filters, MaxResults=1000, **extra)
            for res in page.get("Reservations", []):
                out += [Instance.from_describe(i) for i in res.get("Instances", [])]
            token = page.get("NextToken") or ""
            if not token:
                return out

    def user_data(self, instance_id: str) -> bytes:
        """The instance's user data, decoded (empty when it has none)."""
        attr = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        value = (attr.get("UserData") or {}).get("Value") or ""
        return base64.b64decode(value) if value else b""

    def instance_type(self, name: str) -> Mapping[str, Any]:
        if name not in self._types:
            found = self.ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
            self._types[name] = found[0] if found else {"InstanceType": name}
        return self._types[name]

    def cluster_join(self) -> ClusterJoin:
        if self._join is None:
            info = self.eks.describe_cluster(name=self.cluster)["cluster"]
            self._join = ClusterJoin(
                endpoint=str(info.get("endpoint", "")),
                certificate_authority=str((info.get("certificateAuthority") or {}).get("data", "")),
            )
        return self._join

    def terminate(self, instance_id: str) -> None:
        self.ec2.terminate_instances(InstanceIds=[instance_id])


def make_view(
    *, endpoint: str | None, region: str, cluster: str, states: States | None = None
) -> Ec2View:
    """boto3 clients from the standard AWS environment (``AWS_ENDPOINT_URL`` for moto)."""
    session = boto3.session.Session(region_name=region)
    return Ec2View(
        ec2=session.client("ec2", endpoint_url=endpoint),
        eks=session.client("eks", endpoint_url=endpoint),
        iam=session.client("iam", endpoint_url=endpoint),
        cluster=cluster,
        states=states,
    )
