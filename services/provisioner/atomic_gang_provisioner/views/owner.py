"""The object a gang Workload is for: a batch/v1 Job, a JobSet or a TrainJob.

The provisioner reads the same few metadata fields of all three (which pool the gang
asks for, what names and identifies it, what a change of it is); their specs are read
by ``atomic_gang.gang_object.validate``, the webhook's parse, and not here.
``workload.view.OwnerRef`` is the Workload's reference to this object. The owner caches
index each by ``namespace/uid`` (``job_uid_index``): a lookup names the namespace it may
search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.views.base import ObjectView


class Owner(ObjectView):
    __slots__ = ()

    @property
    def pool(self) -> str | None:
        """The gang's pool label (None on an object that asks for no gang)."""
        pool: str | None = self.labels.get(keys.POOL)
        return pool

    def read_fields(self) -> tuple[Any, ...]:
        """What the Workload side reads of the owner, to compare two versions by: its
        identity, spec (generation), labels, annotations and deletion. Its status moves
        with every pod and is left out."""
        return (
            self.uid,
            self.generation,
            self.labels,
            self.annotations,
            self.deletion_timestamp,
        )


JOB_UID_INDEX = "uid"


def job_uid_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """A Job (JobSet, TrainJob) by ``namespace/uid``."""
    owner = Owner(obj)
    uid = owner.uid
    return (f"{owner.namespace}/{uid}",) if uid else ()
