"""``Resource``: which API collection an object lives in, and the paths that reach it.

Objects cross this package's boundary as plain dicts; a ``Resource`` is the only
other thing a caller needs to name what to read or write.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """An API collection, e.g. ``Resource("batch", "v1", "jobs", namespaced=True, kind="Job")``."""

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        elif self.namespaced and name is not None:
            raise ValueError(f"{self.plural} are namespaced: a namespace is needed for {name!r}")
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


# The collections this package writes on its own (the recorder, the leader elector);
# the provisioner's are in atomic_gang_provisioner.resources.
EVENTS = Resource("", "v1", "events", namespaced=True, kind="Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
