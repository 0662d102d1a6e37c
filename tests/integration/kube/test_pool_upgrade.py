"""Rolling upgrade through the real apiserver: a newer release's GangNodePool CRD has
a status field this release does not know. A newer replica wrote it; this release's
pool reconciler reconciles the pool without error and does not lose the field.

The CRD is structural, so the apiserver prunes fields its schema does not declare:
the test first installs the CRD as a newer release would ship it (this release's
schema plus the new fields), as ``helm upgrade`` of that release would."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang.resources import POOLS
from atomic_gang_provisioner.api.crd import crd
from atomic_gang_provisioner.kube import Informer, KubeClient
from atomic_gang_provisioner.reconcilers.pools import PoolReconciler
from atomic_gang_provisioner.views.node import INSTANCE_INDEX, instance_index
from tests.integration.kube.conftest import install_crd
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import T0, launched
from tests.support.wait import wait_for

pytestmark = pytest.mark.kube

# What a newer release added to status: a scalar and a free-form object.
NEWER_STATUS_SCHEMA: dict[str, Any] = {
    "warmPoolTier": {"type": "string"},
    "drain": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
NEWER_STATUS = {"warmPoolTier": "gold", "drain": {"startedAt": "2026-11-29T11:00:00Z", "nodes": 2}}


def newer_crd() -> dict[str, Any]:
    doc = copy.deepcopy(crd())
    schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["status"]["properties"].update(NEWER_STATUS_SCHEMA)
    return doc


@pytest.fixture(scope="module")
def pools_crd(client: KubeClient) -> None:
    install_crd(client, newer_crd())
    wait_for(lambda: client.list(POOLS) is not None, timeout=30, interval=0.05, what="served")


@pytest.fixture
def stored_by_a_newer_replica(client: KubeClient, pools_crd: None) -> str:
    """A Joining pool past its join deadline, whose status a newer replica wrote."""
    name = f"upgrade-{uuid.uuid4().hex[:8]}"
    obj = launched().to_dict()
    obj["metadata"] = {"name": name}
    client.create(POOLS, obj)
    status = {**obj["status"], **copy.deepcopy(NEWER_STATUS)}

    def kept() -> bool:
        """Written with the newer fields, kept: the apiserver prunes by the schema it
        serves, which follows a CRD update a moment later."""
        current = client.get(POOLS, name)
        written = client.replace_status(POOLS, {**current, "status": status})
        return bool(written["status"].get("warmPoolTier") == "gold")

    wait_for(kept, timeout=30, interval=0.1, what="the newer status kept, not pruned")
    return name


@pytest.fixture
def pools(client: KubeClient) -> Iterator[Informer]:
    informer = Informer(client, POOLS)
    informer.start()
    assert informer.wait_for_sync(15)
    yield informer
    informer.stop()


def test_an_older_replica_reconciles_a_newer_status_and_keeps_its_fields(
    client: KubeClient, pools: Informer, stored_by_a_newer_replica: str
) -> None:
    name = stored_by_a_newer_replica
    # The cache must hold the newer replica's status write, not only the create before it.
    wait_for(
        lambda: ((pools.get(name) or {}).get("status") or {}).get("warmPoolTier") == "gold",
        timeout=15,
        interval=0.02,
        what="cached",
    )
    ctx = context(
        settings=settings(),
        transport=RecordingTransport(),
        now=lambda: T0 + timedelta(seconds=601),  # past the join deadline: status moves
    )
    ctx = replace(
        ctx,
        client=client,
        pools=pools,
        nodes=FakeCache([], {INSTANCE_INDEX: instance_index}),
        launcher=FakeCloud.unused(),  # the release itself waits for the write-ahead of Releasing
    )
    PoolReconciler(ctx).reconcile(name)  # raised ValidationError (extra_forbidden) before

    stored = client.get(POOLS, name)["status"]
    assert stored["phase"] == "Releasing"
    assert stored["lastErrorReason"] == "JoinTimeout"
    assert {k: stored[k] for k in NEWER_STATUS} == NEWER_STATUS
