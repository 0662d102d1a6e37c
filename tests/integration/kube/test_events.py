"""EventRecorder against a real apiserver: core/v1 Events, aggregated by count."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from atomic_gang_provisioner.kube import EventRecorder, KubeClient, reference
from atomic_gang_provisioner.kube.objects import KubeObject
from tests.support import resources as r

pytestmark = pytest.mark.kube
COMPONENT = "atomic-gang-provisioner"


@pytest.fixture
def recorder(client: KubeClient) -> Iterator[EventRecorder]:
    rec = EventRecorder(client, component=COMPONENT, host="test-host")
    yield rec
    rec.close()


def events_about(client: KubeClient, ns: str, name: str) -> list[KubeObject]:
    items = client.list(r.EVENTS, namespace=ns, field_selector=f"involvedObject.name={name}").items
    return sorted(items, key=lambda e: e["metadata"]["name"])


def test_repeats_are_aggregated_into_one_event(
    client: KubeClient, recorder: EventRecorder, namespace: str
) -> None:
    cm = client.create(r.CONFIG_MAPS, {"metadata": {"name": "job-x", "namespace": namespace}})
    for _ in range(4):
        recorder.event(cm, type="Warning", reason="Shortfall", message="0/4 p4d.24xlarge in 1a")
    recorder.event(cm, type="Normal", reason="Acquiring", message="attempt 2/20")
    assert recorder.flush()
    events = events_about(client, namespace, "job-x")
    by_reason = {e["reason"]: e for e in events}
    assert len(events) == 2
    short = by_reason["Shortfall"]
    assert short["count"] == 4
    assert short["type"] == "Warning"
    assert short["message"] == "0/4 p4d.24xlarge in 1a"
    assert short["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "job-x",
        "namespace": namespace,
        "uid": cm["metadata"]["uid"],
    }
    assert short["source"] == {"component": COMPONENT, "host": "test-host"}
    assert short["reportingComponent"] == COMPONENT
    assert by_reason["Acquiring"]["count"] == 1


def test_cluster_scoped_objects_get_events_in_kube_system_not_default(
    client: KubeClient, recorder: EventRecorder
) -> None:
    node = client.create(r.NODES, {"metadata": {"name": "ev-node"}})
    for _ in range(2):
        recorder.event(reference(node), type="Normal", reason="Joined", message="joined the gang")
    assert recorder.flush()
    assert events_about(client, "default", "ev-node") == []  # tenants may read "default"
    (event,) = events_about(client, "kube-system", "ev-node")
    assert event["count"] == 2  # aggregated there too
    assert event["action"] == "Joined"
    assert event["involvedObject"]["kind"] == "Node"
    assert event["reason"] == "Joined"


def test_an_expired_event_is_created_again(
    client: KubeClient, recorder: EventRecorder, namespace: str
) -> None:
    cm = client.create(r.CONFIG_MAPS, {"metadata": {"name": "ttl", "namespace": namespace}})
    recorder.event(cm, type="Normal", reason="Satisfied", message="4/4 Ready")
    assert recorder.flush()
    (first,) = events_about(client, namespace, "ttl")
    client.delete(r.EVENTS, first["metadata"]["name"], namespace=namespace)  # as the TTL would
    recorder.event(cm, type="Normal", reason="Satisfied", message="4/4 Ready")
    assert recorder.flush()
    (again,) = events_about(client, namespace, "ttl")
    assert again["count"] == 1
    assert again["metadata"]["name"] != first["metadata"]["name"]


def test_long_messages_are_truncated_and_failures_do_not_raise(
    client: KubeClient, namespace: str
) -> None:
    fixed = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    rec = EventRecorder(client, component=COMPONENT, now=lambda: fixed)
    try:
        cm = client.create(r.CONFIG_MAPS, {"metadata": {"name": "long", "namespace": namespace}})
        rec.event(cm, type="Normal", reason="Long", message="x" * 5000)
        ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "g", "namespace": "no-such-ns"}
        rec.event(ghost, type="Normal", reason="Lost", message="namespace is gone")  # 404: logged
        assert rec.flush()
        (event,) = events_about(client, namespace, "long")
        assert len(event["message"]) == 1024
        assert event["firstTimestamp"] == "2026-01-02T03:04:05Z"
    finally:
        rec.close()
