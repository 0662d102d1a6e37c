"""The provisioner's informers: one cache per kind, with the indexes the reconcilers
and the event handlers look up."""

from __future__ import annotations

from collections.abc import Collection

from atomic_gang import keys
from atomic_gang_provisioner.kube import Informer, KubeClient, Resource, by_label, by_owner_uid
from atomic_gang_provisioner.nodes import instance_index
from atomic_gang_provisioner.reconcilers.reads import INSTANCE_INDEX, PHASE_INDEX, phase_index
from atomic_gang_provisioner.reconcilers.workload import (
    CHECK_INDEX,
    CLAIM_INDEX,
    JOB_UID_INDEX,
    check_index,
    claim_index,
    job_uid_index,
)
from atomic_gang_provisioner.resources import (
    ADMISSION_CHECKS,
    JOBS,
    NODES,
    POOLS,
    RESOURCE_FLAVORS,
    WORKLOADS,
)

OWNER_INDEX = "owner"
POOL_INDEXERS = {CLAIM_INDEX: claim_index, PHASE_INDEX: phase_index}


def informers(
    client: KubeClient, *, resync_seconds: float, owners: Collection[Resource] = ()
) -> dict[str, Informer]:
    """The caches, with the indexes the reconcilers and the event handlers look up;
    ``owners``: the owner kinds beside Jobs the apiserver serves (JobSets, TrainJobs),
    each cached by its plural, only those with our pool label."""
    resync = resync_seconds  # the objects whose changes other objects do not announce
    found = {
        "pools": Informer(
            client,
            POOLS,
            indexers=POOL_INDEXERS,
            resync_seconds=resync,
        ),
        "workloads": Informer(
            client,
            WORKLOADS,
            indexers={OWNER_INDEX: by_owner_uid(), CHECK_INDEX: check_index},
            resync_seconds=resync,
        ),
        "nodes": Informer(
            client, NODES, indexers={INSTANCE_INDEX: instance_index, "pool": by_label(keys.POOL)}
        ),
        "jobs": Informer(
            client, JOBS, label_selector=keys.POOL, indexers={JOB_UID_INDEX: job_uid_index}
        ),
        "checks": Informer(client, ADMISSION_CHECKS, resync_seconds=resync),
        "flavors": Informer(client, RESOURCE_FLAVORS),
    }
    for res in owners:  # the gang owners, found as the Jobs are: by the pool label
        found[res.plural] = Informer(
            client, res, label_selector=keys.POOL, indexers={JOB_UID_INDEX: job_uid_index}
        )
    return found
