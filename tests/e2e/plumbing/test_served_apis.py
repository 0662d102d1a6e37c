"""What the apiserver says about itself: its version and the API groups it serves.

The Kubernetes binaries are built with the version ldflags, so ``/version``
carries the pinned release; Kueue runs with ``VisibilityOnDemand`` off, so its
visibility API group is not served (its v1beta2 API is).
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import LocalStack
from tests.e2e.kube import Kube

pytestmark = pytest.mark.e2e

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"


def test_apiserver_version_is_the_pinned_release(local_stack: LocalStack, kube: Kube) -> None:
    pinned = local_stack.ctx.bins.version("kube-apiserver")

    version = json.loads(kube.run("get", "--raw", "/version").stdout)

    assert version["gitVersion"] == pinned
    assert version["major"] == "1"
    assert version["minor"] == pinned.split(".")[1]


def test_kueue_visibility_api_is_not_served(kube: Kube) -> None:
    groups = kube.run("api-versions").stdout.split()

    assert "kueue.x-k8s.io/v1beta2" in groups  # Kueue's own API is there
    assert not [g for g in groups if g.startswith(f"{VISIBILITY_GROUP}/")]
    assert not [s for s in kube.items("apiservices") if s["spec"].get("group") == VISIBILITY_GROUP]
    raw = kube.run("get", "--raw", f"/apis/{VISIBILITY_GROUP}", check=False)
    assert raw.returncode != 0
    assert "NotFound" in raw.stderr or "not found" in raw.stderr.lower()
