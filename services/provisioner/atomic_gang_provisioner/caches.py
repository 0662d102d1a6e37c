"""The provisioner's informers: one cache per kind, with the indexes the reconcilers
and the event handlers look up.

The caches hold what we act on, so they grow with our gangs, not with the cluster:
Nodes with our pool label (a gang Node registers with it: the kubelet's
``--node-labels`` in our user data), Workloads that carry one of our AdmissionChecks,
Jobs and the other gang owners with our pool label. Nodes and Workloads are kept
slim (``nodes.slim_node``, ``workload.slim``): what the reconcilers read of them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from atomic_gang import keys
from atomic_gang.resources import (
    ADMISSION_CHECKS,
    JOBS,
    NODES,
    POOLS,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from atomic_gang_provisioner.kube import Informer, KubeClient, KubeObject, Resource
from atomic_gang_provisioner.nodes import keep_gang_node
from atomic_gang_provisioner.views.admission_check import our_check_names
from atomic_gang_provisioner.views.node import (
    INSTANCE_INDEX,
    POOL_INDEX,
    instance_index,
    pool_index,
)
from atomic_gang_provisioner.views.owner import JOB_UID_INDEX, job_uid_index
from atomic_gang_provisioner.views.pool_object import POOL_INDEXERS
from atomic_gang_provisioner.workload.slim import carries_check, slim
from atomic_gang_provisioner.workload.view import CHECK_INDEX, OWNER_INDEX, check_index, owner_index

# Workloads a list page holds: most of a cluster's are another team's, each parsed whole
# before the transform drops it, so a page is what a start-up list adds to the peak.
WORKLOAD_PAGE = 100


class WorkloadScope:
    """Which Workloads the Workload cache keeps: those that carry one of our
    AdmissionChecks (by controllerName), slim. The names come from the AdmissionCheck
    cache; when they change (a check of ours created, renamed away or deleted) the
    Workload cache must list again (``refresh`` says so), since what it left out
    before is not in it."""

    def __init__(self, controller_name: str) -> None:
        self._controller = controller_name
        self.names: frozenset[str] = frozenset()  # swapped whole: read by another thread

    def refresh(self, checks: Iterable[KubeObject]) -> bool:
        """Take the names from the cached AdmissionChecks; whether they changed."""
        names = our_check_names(checks, self._controller)
        changed, self.names = names != self.names, names
        return changed

    def keep(self, wl: KubeObject) -> KubeObject | None:
        return slim(wl) if carries_check(wl, self.names) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Caches:
    """The provisioner's informers, one a kind, each declared with its indexes."""

    pools: Informer  # CLAIM_INDEX, PHASE_INDEX
    workloads: Informer  # OWNER_INDEX (the owner's uid), CHECK_INDEX; those of our checks
    nodes: Informer  # INSTANCE_INDEX, POOL_INDEX; gang Nodes only
    jobs: Informer  # JOB_UID_INDEX; with our pool label
    checks: Informer
    flavors: Informer
    # The gang owners beside Jobs the apiserver serves, by plural ("jobsets",
    # "trainjobs"), found as Jobs are (JOB_UID_INDEX, our pool label).
    owners: Mapping[str, Informer]

    def by_name(self) -> dict[str, Informer]:
        """Every cache by name, the AdmissionChecks first: they say which Workloads the
        Workload cache keeps, so they sync before it starts."""
        return {
            "checks": self.checks,
            "pools": self.pools,
            "workloads": self.workloads,
            "nodes": self.nodes,
            "jobs": self.jobs,
            "flavors": self.flavors,
            **self.owners,
        }

    def __iter__(self) -> Iterator[Informer]:
        return iter(self.by_name().values())


def informers(
    client: KubeClient,
    *,
    resync_seconds: float,
    scope: WorkloadScope,
    owners: Collection[Resource] = (),
) -> Caches:
    """The caches, with the indexes the reconcilers and the event handlers look up;
    ``scope``: the Workloads kept; ``owners``: the owner kinds beside Jobs the
    apiserver serves (JobSets, TrainJobs), each cached by its plural, only those with
    our pool label."""
    resync = resync_seconds  # the objects whose changes other objects do not announce
    return Caches(
        pools=Informer(client, POOLS, indexers=POOL_INDEXERS, resync_seconds=resync),
        workloads=Informer(
            client,
            WORKLOADS,
            indexers={OWNER_INDEX: owner_index, CHECK_INDEX: check_index},
            transform=scope.keep,
            page_size=WORKLOAD_PAGE,
            resync_seconds=resync,
        ),
        nodes=Informer(
            client,
            NODES,
            label_selector=keys.POOL,
            indexers={INSTANCE_INDEX: instance_index, POOL_INDEX: pool_index},
            transform=keep_gang_node,
        ),
        jobs=Informer(
            client, JOBS, label_selector=keys.POOL, indexers={JOB_UID_INDEX: job_uid_index}
        ),
        checks=Informer(client, ADMISSION_CHECKS, resync_seconds=resync),
        flavors=Informer(client, RESOURCE_FLAVORS),
        # The gang owners, found as the Jobs are: by the pool label.
        owners={
            res.plural: Informer(
                client, res, label_selector=keys.POOL, indexers={JOB_UID_INDEX: job_uid_index}
            )
            for res in owners
        },
    )
