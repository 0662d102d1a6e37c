"""The samples the demo can tell a story about: one typed description per kind.

A :class:`Sample` holds everything that differs between a gang Job, a gang
JobSet and a gang TrainJob for the demo: the file it applies, the object's kind
and name, how Kueue names its Workload, which condition says it is done, how its
pods are found, which of them are the gang and which must stay on the cluster's
ordinary nodes. The observer and the story read these fields and branch on
nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atomic_gang.pool_access import namespaced_name
from atomic_gang.resources import JOBS, JOBSETS, TRAINJOBS
from atomic_gang_devstack import trainer_manifests as tm
from atomic_gang_devstack.bins import REPO_ROOT
from atomic_gang_kubelite import Resource

DEMO_DIR = REPO_ROOT / "hack" / "demo"


@dataclass(frozen=True, kw_only=True)
class Sample:
    story: str  # the --story name
    about: str  # what the story shows, for --help
    file: Path
    resource: Resource  # its kind is the sample's kind
    name: str
    namespace: str
    pool_label: str  # the file's atomic-gang.k8s.aws/pool label
    count: int
    workload_prefix: str  # Kueue names the Workload <prefix><name>-<hash>
    done_condition: str  # True on the object once it has finished well
    pod_label: str  # every pod of the sample carries <pod_label>=<name>
    role_label: str = ""  # the pod label naming its role; "": a single role
    gang_roles: tuple[str, ...] = ()  # roles whose pods get a gang node each; (): every pod
    ordinary_roles: tuple[str, ...] = ()  # roles whose pods must stay off the gang
    ordinary_nodes: int = 0  # general nodes the stack adds for the ordinary roles
    gang_noun: str = ""  # what one gang pod is called; "": after its roles

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def pool(self) -> str:
        """The GangNodePool the sample's pool label names in its namespace: the name its
        Nodes, EC2 tags and Events carry."""
        return namespaced_name(self.pool_label, self.namespace)

    @property
    def pod_selector(self) -> str:
        return f"{self.pod_label}={self.name}"

    @property
    def gang_pod(self) -> str:
        """What one pod of the gang is called in the narration: ``pod``, ``workers pod``,
        or the sample's own word for it (``trainer pod``)."""
        if self.gang_noun:
            return f"{self.gang_noun} pod"
        return f"{'/'.join(self.gang_roles)} pod" if self.gang_roles else "pod"

    def is_gang(self, role: str) -> bool:
        return not self.gang_roles or role in self.gang_roles

    def owns_workload(self, workload_name: str) -> bool:
        return workload_name.startswith(f"{self.workload_prefix}{self.name}-")


JOB = Sample(
    story="job",
    about="a gang Job, its 4 pods on 4 gang nodes",
    file=DEMO_DIR / "allreduce-pretrain.yaml",
    resource=JOBS,
    name="allreduce-pretrain",
    namespace="default",
    pool_label="pretrain-p4d",
    count=4,
    workload_prefix="job-",
    done_condition="Complete",
    pod_label="batch.kubernetes.io/job-name",
)

JOBSET = Sample(
    story="jobset",
    about="a gang JobSet, its 2 x 2 workers pods on 4 gang nodes and its driver pod on"
    " an ordinary node",
    file=DEMO_DIR / "allreduce-jobset.yaml",
    resource=JOBSETS,
    name="allreduce-jobset",
    namespace="default",
    pool_label="jobset-p4d",
    count=4,
    workload_prefix="jobset-",
    done_condition="Completed",
    pod_label="jobset.sigs.k8s.io/jobset-name",
    role_label="jobset.sigs.k8s.io/replicatedjob-name",
    gang_roles=("workers",),
    ordinary_roles=("driver",),
    ordinary_nodes=1,
)

# A TrainJob's pods are its JobSet's: the Trainer names the JobSet after the TrainJob.
TRAINJOB = Sample(
    story="trainjob",
    about="a gang TrainJob, its 4 trainer (node) pods on 4 gang nodes and its dataset"
    " initializer's pod on an ordinary node",
    file=DEMO_DIR / "llama-trainjob.yaml",
    resource=TRAINJOBS,
    name="llama-trainjob",
    namespace="default",
    pool_label="trainjob-p4d",
    count=4,
    workload_prefix="trainjob-",
    done_condition="Complete",
    pod_label="jobset.sigs.k8s.io/jobset-name",
    role_label="jobset.sigs.k8s.io/replicatedjob-name",
    gang_roles=(tm.TRAINER_ROLE,),  # the default gang-roles of a TrainJob
    ordinary_roles=(tm.INITIALIZER_ROLE,),
    ordinary_nodes=1,
    gang_noun="trainer",
)

SAMPLES = {s.story: s for s in (JOB, JOBSET, TRAINJOB)}
