"""What every view reads of an object: metadata, spec and status, each read as empty
when absent or null, the way the ``(obj.get(k) or {})`` chains it replaces did."""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang_provisioner.views.base import EMPTY, ObjectView, section

FULL: dict[str, Any] = {
    "metadata": {
        "name": "a",
        "namespace": "team",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"k": "v"},
        "annotations": {"note": "x"},
        "deletionTimestamp": "2026-12-01T10:00:00Z",
    },
    "spec": {"s": 1},
    "status": {"t": 2},
}


def test_reads_every_metadata_field() -> None:
    obj = ObjectView(FULL)
    assert (obj.name, obj.namespace, obj.uid, obj.resource_version) == ("a", "team", "u-1", "42")
    assert obj.generation == 3
    assert obj.labels == {"k": "v"}
    assert obj.annotations == {"note": "x"}
    assert obj.deletion_timestamp == "2026-12-01T10:00:00Z"
    assert obj.deleting
    assert obj.spec == {"s": 1}
    assert obj.status == {"t": 2}
    assert obj.raw is FULL


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"metadata": None, "spec": None, "status": None},
        {"metadata": {}, "spec": {}, "status": {}},
        {"metadata": {"labels": None, "annotations": None, "deletionTimestamp": None}},
    ],
    ids=["absent", "null", "empty", "null-fields"],
)
def test_an_absent_or_null_section_reads_empty(raw: dict[str, Any]) -> None:
    obj = ObjectView(raw)
    assert obj.spec == {}
    assert obj.status == {}
    assert (obj.name, obj.namespace, obj.uid, obj.resource_version) == ("", "", "", "")
    assert obj.generation == 0
    assert obj.labels == {}
    assert obj.annotations == {}
    assert obj.deletion_timestamp is None
    assert not obj.deleting


def test_the_empty_section_is_shared_and_read_only() -> None:
    obj = ObjectView({"status": None})
    assert obj.status is EMPTY
    assert obj.labels is EMPTY
    with pytest.raises(TypeError):
        obj.status["phase"] = "x"  # type: ignore[index]


def test_section_reads_a_set_value_and_empties_the_rest() -> None:
    inner = {"x": 1}
    assert section({"k": inner}, "k") is inner
    assert section({"k": None}, "k") is EMPTY
    assert section({"k": {}}, "k") is EMPTY
    assert section({}, "k") is EMPTY


def test_a_view_does_not_copy_the_object() -> None:
    labels = {"k": "v"}
    obj = ObjectView({"metadata": {"labels": labels}})
    assert obj.labels is labels
