"""What the Workload cache keeps: only the Workloads on our check, and of each only what
``view`` reads (and what the cache's indexes and our Events use).

A cluster's Workloads are mostly other teams': Kueue writes every check of a
Workload's ClusterQueue into its status as soon as it queues it, so a Workload whose
status names none of our AdmissionChecks is none of ours and is not kept. Of ours,
``managedFields``, the pod templates beyond their containers' resources, the
condition messages and Kueue's admission details (resource usage, topology) are
dropped, as client-go's informer transforms drop them. Pure; the tests hold
``view(slim(wl)) == view(wl)``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from atomic_gang_provisioner.views.base import ObjectView
from atomic_gang_provisioner.workload.view import ELASTIC_ANNOTATION, JOB_UID_LABEL, check_states

_META = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
_OWNER_REF = ("apiVersion", "kind", "name", "uid", "controller")
_CONTAINER = ("resources", "restartPolicy")  # what a pod's extended requests are read from
_RESOURCES = ("limits", "requests")


def carries_check(wl: Mapping[str, Any], names: Collection[str]) -> bool:
    """Whether the Workload's status names one of these AdmissionChecks."""
    return any(isinstance(c, Mapping) and c.get("name") in names for c in check_states(wl))


def slim(wl: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a Workload the provisioner reads; shares them with ``wl``."""
    out: dict[str, Any] = {k: wl[k] for k in ("apiVersion", "kind") if k in wl}
    out["metadata"] = _metadata(ObjectView(wl).metadata)
    if "spec" in wl:
        out["spec"] = _spec(wl["spec"])
    if "status" in wl:
        out["status"] = _status(wl["status"])
    return out


def _only(obj: Any, names: Collection[str]) -> Any:
    """``obj`` with only these keys; anything but a mapping as it is (a malformed value
    reads the same from the copy)."""
    if not isinstance(obj, Mapping):
        return obj
    return {k: obj[k] for k in names if k in obj}


def _each(value: Any, fn: Callable[[Any], Any]) -> Any:
    return [fn(v) for v in value] if isinstance(value, list) else value


def _metadata(meta: Any) -> Any:
    out = _only(meta, _META)
    if not isinstance(meta, Mapping):
        return out
    if "ownerReferences" in meta:
        out["ownerReferences"] = _each(meta["ownerReferences"], lambda r: _only(r, _OWNER_REF))
    for key, wanted in (("labels", JOB_UID_LABEL), ("annotations", ELASTIC_ANNOTATION)):
        if key in meta:
            out[key] = _only(meta[key], (wanted,))
    return out


def _spec(spec: Any) -> Any:
    out = _only(spec, ("active",))
    if isinstance(spec, Mapping) and "podSets" in spec:
        out["podSets"] = _each(spec["podSets"], _pod_set)
    return out


def _pod_set(pod_set: Any) -> Any:
    out = _only(pod_set, ("name", "count"))
    if isinstance(pod_set, Mapping) and "template" in pod_set:
        template = pod_set["template"]
        out["template"] = _only(template, ())
        if isinstance(template, Mapping) and "spec" in template:
            out["template"]["spec"] = _pod_spec(template["spec"])
    return out


def _pod_spec(spec: Any) -> Any:
    if not isinstance(spec, Mapping):
        return spec
    return {
        key: _each(spec[key], _container) for key in ("containers", "initContainers") if key in spec
    }


def _container(container: Any) -> Any:
    out = _only(container, _CONTAINER)
    if isinstance(out, dict) and "resources" in out:
        out["resources"] = _only(out["resources"], _RESOURCES)
    return out


def _status(status: Any) -> Any:
    out = _only(status, ("admissionChecks",))  # every field of each state is read
    if not isinstance(status, Mapping):
        return out
    if "conditions" in status:
        out["conditions"] = _each(status["conditions"], lambda c: _only(c, ("type", "status")))
    if "admission" in status:
        admission = status["admission"]
        out["admission"] = _only(admission, ())
        if isinstance(admission, Mapping) and "podSetAssignments" in admission:
            out["admission"]["podSetAssignments"] = _each(
                admission["podSetAssignments"], lambda a: _only(a, ("name", "flavors"))
            )
    return out
