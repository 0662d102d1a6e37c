"""An incremental node provisioner, written for the idle-cost bench only.

It behaves the way Karpenter and Cluster Autoscaler do for a gang: it reacts to
pending pods, launches nodes **one at a time** (RunInstances with MinCount =
MaxCount = 1) for as long as capacity allows, **keeps whatever it got** while the
rest of the gang waits for capacity, and removes a Job's nodes once the Job is gone
(consolidation, immediately: more generous than either tool's defaults). It has no
insufficient-capacity cache (Karpenter backs off an offering for 3 minutes) and
retries every tick, which only helps it.

Its nodes join through the same node-join simulator: the user data is the same
nodeadm NodeConfig our engine writes, labelled with the Job's name, and the instance
profile is the cluster's node role (EKS lets a node register only with a role it
authorizes: without one, kubelet has no credentials and the node never joins).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from atomic_gang import keys
from atomic_gang.resources import JOBS, PODS
from atomic_gang_provisioner.cloud.userdata import ClusterJoin, user_data
from atomic_gang_provisioner.kube import KubeClient

NODE_LABEL = "bench.atomic-gang.dev/job"


def cluster_join(eks: Any, cluster: str) -> ClusterJoin:
    info = eks.describe_cluster(name=cluster)["cluster"]
    return ClusterJoin(
        name=cluster,
        endpoint=info["endpoint"],
        certificate_authority=info["certificateAuthority"]["data"],
        service_cidr=info["kubernetesNetworkConfig"]["serviceIpv4Cidr"],
    )


# Another provisioner's nodes carry a taint of their own: the gang taint is ours, and
# the webhook refuses any Job that tolerates it (only Kueue adds that toleration).
BASELINE_TAINT = "baseline.example.com/gang"


def baseline_user_data(join: ClusterJoin, pool: str) -> str:
    """Our node user data with the baseline's taint in place of the gang taint."""
    data = user_data(join=join, labels={NODE_LABEL: pool}, pool=pool)
    return data.replace(f"{keys.GANG_TAINT}=", f"{BASELINE_TAINT}=")


@dataclass
class IncrementalBaseline:
    ec2: Any  # boto3 EC2 client without retries (an ICE is an answer, not a glitch)
    kube: KubeClient
    namespace: str
    subnet: str
    join: ClusterJoin
    cluster: str
    instance_profile: str  # holds a node role the cluster authorizes (an EC2_LINUX entry)
    instance_type: str = "p4d.24xlarge"
    image: str = "ami-0123456789abcdef0"
    launches: Counter[str] = field(default_factory=Counter)  # "ok" / error code
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, interval: float = 0.5) -> None:
        while not self.stop.wait(interval):
            self.tick()

    def tick(self) -> None:
        live = self._live()
        jobs = self.kube.list(JOBS, namespace=self.namespace).items
        unscheduled = Counter(
            p["metadata"]["labels"].get("batch.kubernetes.io/job-name", "")
            for p in self.kube.list(PODS, namespace=self.namespace).items
            if not (p.get("spec") or {}).get("nodeName")
        )
        names = set()
        for job in sorted(jobs, key=lambda j: str(j["metadata"]["creationTimestamp"])):
            name = job["metadata"]["name"]
            names.add(name)
            want = int(job["spec"]["parallelism"]) - len(live.get(name, []))
            if unscheduled[name] and want > 0 and not self._launch(name, want):
                break  # no capacity left this tick
        gone = [i for pool, ids in live.items() if pool not in names for i in ids]
        if gone:
            self.ec2.terminate_instances(InstanceIds=gone)

    def _launch(self, pool: str, want: int) -> bool:
        """One instance per call, up to ``want``; False once EC2 says no."""
        for _ in range(want):
            try:
                self.ec2.run_instances(**self._params(pool))
            except ClientError as err:
                self.launches[err.response["Error"]["Code"]] += 1
                return False
            self.launches["ok"] += 1
        return True

    def _params(self, pool: str) -> dict[str, Any]:
        tags = {keys.MANAGED: "true", keys.CLUSTER: self.cluster, keys.POOL: pool}
        return {
            "ImageId": self.image,
            "InstanceType": self.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "SubnetId": self.subnet,
            "IamInstanceProfile": {"Name": self.instance_profile},
            "UserData": baseline_user_data(self.join, pool),
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ],
        }

    def _live(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        page = self.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{keys.CLUSTER}", "Values": [self.cluster]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ],
            MaxResults=1000,
        )
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                pool = next((t["Value"] for t in inst.get("Tags", []) if t["Key"] == keys.POOL), "")
                out.setdefault(pool, []).append(inst["InstanceId"])
        return out


def baseline_job(name: str, namespace: str, *, count: int) -> dict[str, Any]:
    """A plain Job (no queue, no gang keys): its pods wait for nodes labelled with its name."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": count,
            "completions": count,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": LONG_RUN},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": {NODE_LABEL: name},
                    "tolerations": [{"key": BASELINE_TAINT, "operator": "Exists"}],
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "trainer:latest",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}},
                        }
                    ],
                },
            },
        },
    }


# kwok keeps the pods Running; the bench ends a job once all N ran for its duration.
LONG_RUN = {
    "pod-complete.stage.kwok.x-k8s.io/delay": "1h",
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h",
}
