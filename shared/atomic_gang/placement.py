"""N pods on N nodes, or a warning.

A gang is N pods on N nodes, but the scheduler is free to pack request-less pods
onto one node while the other N-1 idle and bill. podSetUpdates cannot add affinity,
so the Job itself must ask for one pod per node: a required pod anti-affinity, or a
``DoNotSchedule`` topology spread with ``maxSkew: 1``, on ``kubernetes.io/hostname``
over the Job's own pods; or a request of an extended resource (GPU, Neuron, EFA),
which in practice fills the node. Without any of them the webhook warns, or, with
``requireOnePodPerNode``, denies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomic_gang.devices import extended_requests
from atomic_gang.objects import field_list, field_map, field_str, items, template_labels

HOSTNAME = "kubernetes.io/hostname"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
WARNING = (
    "atomic-gang: the {n} gang pods may share nodes, idling billed gang nodes; add a required "
    "podAntiAffinity (or a DoNotSchedule topologySpreadConstraint, maxSkew 1) on "
    f"{HOSTNAME} over the Job's pods, or request a GPU/Neuron/EFA resource"
)


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = field_str(expr, "key", "matchExpressions"), field_str(expr, "operator", "")
    values = field_list(expr, "values", "matchExpressions")
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels: null selects nothing, {} everything."""
    if selector is None:
        return False
    wanted = field_map(selector, "matchLabels", "labelSelector")
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    exprs = items(field_list(selector, "matchExpressions", "labelSelector"), "labelSelector")
    return all(_requirement(e, labels) for e in exprs)


def _anti_affinity(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    anti = field_map(field_map(pod, "affinity", "spec"), "podAntiAffinity", "affinity")
    terms = field_list(anti, "requiredDuringSchedulingIgnoredDuringExecution", "podAntiAffinity")
    return any(
        field_str(t, "topologyKey", "podAntiAffinity") == HOSTNAME
        # Listed namespaces, or a namespace selector, may leave out the Job's own.
        and not field_list(t, "namespaces", "podAntiAffinity")
        and t.get("namespaceSelector") in (None, {})
        and selects(t.get("labelSelector"), labels)
        for t in items(terms, "podAntiAffinity")
    )


def _spread(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    constraints = items(field_list(pod, "topologySpreadConstraints", "spec"), "spec")
    return any(
        c.get("maxSkew") == 1
        and field_str(c, "topologyKey", "topologySpreadConstraints") == HOSTNAME
        and field_str(c, "whenUnsatisfiable", "topologySpreadConstraints") == "DoNotSchedule"
        and selects(c.get("labelSelector"), labels)
        for c in constraints
    )


def one_pod_per_node(
    job: Mapping[str, Any], job_spec: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """True when the Job's own spec keeps its pods on distinct nodes (``pod`` is its
    ``spec.template.spec``; the Job controller labels each pod with the Job's name)."""
    name = field_str(field_map(job, "metadata", "object"), "name", "metadata")
    return one_pod_per_node_with(
        job_spec, pod, dict.fromkeys(JOB_NAME_LABELS, name) if name else {}
    )


def one_pod_per_node_with(
    job_spec: Mapping[str, Any], pod: Mapping[str, Any], controller_labels: Mapping[str, str]
) -> bool:
    """The rule for a Job template whose pods also carry ``controller_labels`` (the Job
    controller's; for a JobSet's child Jobs also ``jobset.sigs.k8s.io/jobset-name``)."""
    if extended_requests(pod):
        return True
    if not pod.get("affinity") and not pod.get("topologySpreadConstraints"):
        return False
    labels = {k: v for k, v in template_labels(job_spec).items() if isinstance(v, str)}
    labels.update(controller_labels)
    return _anti_affinity(pod, labels) or _spread(pod, labels)
