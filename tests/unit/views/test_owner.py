"""The owner view (a Job, a JobSet or a TrainJob: the same metadata is read of each):
its pool label, and what a change of it is."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_provisioner.views.owner import Owner


def job(**meta: Any) -> dict[str, Any]:
    base = {"name": "train", "namespace": "team", "uid": "u-1", "generation": 1}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {**base, **meta}}


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("batch/v1", "Job"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
    ],
)
def test_reads_the_pool_and_name_of_each_kind(api_version: str, kind: str) -> None:
    raw = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "g", "namespace": "team", "uid": "u", "labels": {keys.POOL: "p"}},
        "spec": {"whatever": True},
    }
    owner = Owner(raw)
    assert (owner.name, owner.namespace, owner.uid, owner.pool) == ("g", "team", "u", "p")


@pytest.mark.parametrize(
    "raw", [{}, {"metadata": None}, {"metadata": {"labels": None}}], ids=["bare", "null", "labels"]
)
def test_an_owner_without_labels_asks_for_no_pool(raw: dict[str, Any]) -> None:
    assert Owner(raw).pool is None


def test_status_churn_is_no_change() -> None:
    old = {**job(), "status": {"active": 1}}
    new = {**job(), "status": {"active": 8, "ready": 8}}
    assert Owner(old).read_fields() == Owner(new).read_fields()


@pytest.mark.parametrize(
    "changed",
    [
        {"uid": "u-2"},
        {"generation": 2},
        {"labels": {keys.POOL: "p"}},
        {"annotations": {"a": "b"}},
        {"deletionTimestamp": "2026-12-01T10:00:00Z"},
    ],
    ids=["uid", "generation", "labels", "annotations", "deletion"],
)
def test_a_change_of_what_is_read_is_a_change(changed: dict[str, Any]) -> None:
    assert Owner(job()).read_fields() != Owner(job(**changed)).read_fields()
