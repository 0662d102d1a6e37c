"""Launch templates: one per pool shape, versions created, defaulted and pruned.

A shape this process has not seen is created outright (a new pool costs one
call); only when EC2 answers that the name exists is the template read back.

The default version holds what the shape fixes (AMI, profile, cluster security
group, IMDSv2, ownership tags); its VersionDescription carries a digest of that
data, so a change (a new recommended AMI) makes a new default and the old
versions are deleted. Fleet launches also need a per-generation version
(CreateFleet cannot override user data). It carries the full data (no
SourceVersion) and is found again by its description, the ClientToken, which
keeps a retried CreateFleet byte-identical.

A shape's shared template (runinstances pools) outlives any one pool: the reaper
deletes it once this process has not used it for ``idle_seconds`` (the process's
start counts as a use, so a restart never deletes what a pool is about to use).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from atomic_gang import keys
from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.aws.parse import tag_specs
from atomic_gang_provisioner.cloud.aws.session import AwsClients
from atomic_gang_provisioner.cloud.error_codes import CloudError

BASE_PREFIX = "base-"
TEMPLATE_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"


@dataclass(frozen=True, slots=True)
class TemplateRef:
    template_id: str
    name: str
    version: int
    digest: str


def digest(data: dict[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Templates:
    def __init__(
        self,
        *,
        clients: AwsClients,
        caller: Caller,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ec2 = clients.ec2
        self._caller = caller
        self._now = monotonic
        self._started = monotonic()
        self._used: dict[str, float] = {}  # name -> when a launch last ensured it
        self._known: dict[str, TemplateRef] = {}
        # One ensure per name at a time: pools of a new shape acquiring together make
        # one CreateLaunchTemplate, the others then find it known.
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _call(self, op: str, **params: Any) -> dict[str, Any]:
        return self._caller.call(self._ec2, op, **params)

    def ensure(self, *, name: str, data: dict[str, Any], tags: dict[str, str]) -> TemplateRef:
        """The template's default version, equal to ``data``; created or updated."""
        with self._locks_lock:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            self._used[name] = self._now()
            return self._ensure(name=name, data=data, tags=tags)

    def prune_shared(self, *, cluster: str, idle_seconds: float) -> list[str]:
        """Delete this cluster's shared templates (ours, no pool tag) unused for
        ``idle_seconds``; each under its name's lock, so never one a launch is ensuring."""
        found = self._call(
            "describe_launch_templates",
            Filters=[
                {"Name": f"tag:{keys.CLUSTER}", "Values": [cluster]},
                {"Name": f"tag:{keys.MANAGED}", "Values": ["true"]},
            ],
        )["LaunchTemplates"]
        gone: list[str] = []
        for lt in found:
            name = str(lt["LaunchTemplateName"])
            if any(t.get("Key") == keys.POOL for t in lt.get("Tags") or ()):
                continue  # a pool's own (fleet): deleted with its pool
            with self._locks_lock:
                lock = self._locks.setdefault(name, threading.Lock())
            with lock:
                if self._now() - self._used.get(name, self._started) < idle_seconds:
                    continue
                self._call("delete_launch_template", LaunchTemplateId=lt["LaunchTemplateId"])
                self._known.pop(name, None)
                self._used.pop(name, None)
            gone.append(name)
        return gone

    def _ensure(self, *, name: str, data: dict[str, Any], tags: dict[str, str]) -> TemplateRef:
        want = digest(data)
        ref = self._known.get(name)
        if ref is None:
            # Most often a new pool shape: create first (one call), and only read
            # what exists when EC2 says the name is taken (a restart, another replica).
            ref = self._create(name=name, data=data, tags=tags, want=want)
        if ref is None or ref.digest != want:
            ref = self._load_or_create(name=name, data=data, tags=tags, want=want)
        self._known[name] = ref
        return ref

    def _create(
        self, *, name: str, data: dict[str, Any], tags: dict[str, str], want: str
    ) -> TemplateRef | None:
        """The template with ``data`` as version 1; None if the name exists already."""
        try:
            created = self._call(
                "create_launch_template",
                LaunchTemplateName=name,
                VersionDescription=BASE_PREFIX + want,
                LaunchTemplateData=data,
                TagSpecifications=tag_specs(["launch-template"], tags),
            )["LaunchTemplate"]
        except CloudError as err:
            if err.code != TEMPLATE_EXISTS:
                raise
            return None
        return TemplateRef(created["LaunchTemplateId"], name, 1, want)

    def _load_or_create(
        self, *, name: str, data: dict[str, Any], tags: dict[str, str], want: str
    ) -> TemplateRef:
        try:
            found = self._call("describe_launch_templates", LaunchTemplateNames=[name])
        except CloudError as err:
            if err.kind != "not_found":
                raise
            # Deleted since we saw it (forget_pool in another replica): make it again.
            created = self._create(name=name, data=data, tags=tags, want=want)
            if created is None:
                raise
            return created
        lt = found["LaunchTemplates"][0]
        versions = self.versions(lt["LaunchTemplateId"])
        current = next((v for v in versions if v["DefaultVersion"]), None)
        if current is not None and current.get("VersionDescription") == BASE_PREFIX + want:
            return TemplateRef(lt["LaunchTemplateId"], name, int(current["VersionNumber"]), want)
        return self._new_default(lt["LaunchTemplateId"], name, data, want, versions)

    def _new_default(
        self, tid: str, name: str, data: dict[str, Any], want: str, old: list[dict[str, Any]]
    ) -> TemplateRef:
        made = self._call(
            "create_launch_template_version",
            LaunchTemplateId=tid,
            VersionDescription=BASE_PREFIX + want,
            LaunchTemplateData=data,
        )["LaunchTemplateVersion"]
        number = int(made["VersionNumber"])
        self._call("modify_launch_template", LaunchTemplateId=tid, DefaultVersion=str(number))
        stale = [int(v["VersionNumber"]) for v in old if int(v["VersionNumber"]) != number]
        self._delete_versions(tid, stale)
        return TemplateRef(tid, name, number, want)

    def versions(self, template_id: str) -> list[dict[str, Any]]:
        return list(
            self._caller.pages(
                self._ec2,
                "describe_launch_template_versions",
                "LaunchTemplateVersions",
                LaunchTemplateId=template_id,
            )
        )

    def _delete_versions(self, template_id: str, numbers: list[int]) -> None:
        for i in range(0, len(numbers), 200):
            self._call(
                "delete_launch_template_versions",
                LaunchTemplateId=template_id,
                Versions=[str(n) for n in numbers[i : i + 200]],
            )

    def generation_version(
        self, *, base: TemplateRef, token: str, data: dict[str, Any]
    ) -> tuple[int, bool]:
        """A version for one fleet launch and whether it already existed (a retry of
        this token: its CreateFleet may replay an old answer); older ones pruned."""
        versions = self.versions(base.template_id)
        mine = [v for v in versions if v.get("VersionDescription") == token]
        if mine:
            return int(mine[0]["VersionNumber"]), True
        made = self._call(
            "create_launch_template_version",
            LaunchTemplateId=base.template_id,
            VersionDescription=token,
            LaunchTemplateData=data,
        )["LaunchTemplateVersion"]
        stale = [
            int(v["VersionNumber"])
            for v in versions
            if not v["DefaultVersion"]
            and not str(v.get("VersionDescription", "")).startswith(BASE_PREFIX)
        ]
        self._delete_versions(base.template_id, stale)
        return int(made["VersionNumber"]), False

    def delete_for_pool(self, *, cluster: str, pool: str) -> list[str]:
        found = self._call(
            "describe_launch_templates",
            Filters=[
                {"Name": f"tag:{keys.CLUSTER}", "Values": [cluster]},
                {"Name": f"tag:{keys.POOL}", "Values": [pool]},
            ],
        )["LaunchTemplates"]
        for lt in found:
            self._call("delete_launch_template", LaunchTemplateId=lt["LaunchTemplateId"])
            self._known.pop(lt["LaunchTemplateName"], None)
        return [lt["LaunchTemplateId"] for lt in found]
