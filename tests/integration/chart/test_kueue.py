"""The Kueue objects match the provisioner: controllerName, gang node labels and taint, quota."""

from __future__ import annotations

from atomic_gang.settings import DEFAULT_CONTROLLER_NAME
from tests.integration.chart.render import Rendered


def test_admission_check_names_our_controller(default: Rendered) -> None:
    check = default.one("AdmissionCheck")

    assert check["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert check["metadata"]["name"] == "atomic-gang-check"
    assert check["spec"] == {"controllerName": DEFAULT_CONTROLLER_NAME}


def test_flavor_is_a_quota_bucket_that_claims_no_gang_node(default: Rendered) -> None:
    """Kueue gives a flavor's nodeLabels and tolerations to every PodSet: a JobSet's
    driver would be held to gang nodes. The podSetUpdates pin the gang roles alone."""
    spec = default.one("ResourceFlavor")["spec"]

    assert spec == {}


def test_cluster_queue_quota_and_check(default: Rendered, renders: dict[str, Rendered]) -> None:
    spec = default.one("ClusterQueue")["spec"]
    (group,) = spec["resourceGroups"]
    (flavor,) = group["flavors"]

    assert group["coveredResources"] == ["cpu", "memory"]
    assert flavor["name"] == "atomic-gang-flavor"
    assert flavor["resources"] == [
        {"name": "cpu", "nominalQuota": "256"},
        {"name": "memory", "nominalQuota": "1Ti"},
    ]
    assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "atomic-gang-check"}]}
    custom = renders["custom"].one("ClusterQueue")["spec"]["resourceGroups"][0]
    assert custom["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert custom["flavors"][0]["resources"][0] == {"name": "cpu", "nominalQuota": "512"}


def test_local_queues_per_namespace(default: Rendered, renders: dict[str, Rendered]) -> None:
    (lq,) = default.of("LocalQueue")
    custom = renders["custom"].of("LocalQueue")

    assert (lq["metadata"]["namespace"], lq["metadata"]["name"]) == ("default", "atomic-gang-queue")
    assert lq["spec"] == {"clusterQueue": "atomic-gang-cluster-queue"}
    assert [q["metadata"]["namespace"] for q in custom] == ["team-a", "team-b"]


def test_kueue_create_switches_and_quota_only_needed_for_the_queue(
    renders: dict[str, Rendered],
) -> None:
    r = renders["no-kueue"]

    assert r.returncode == 0, r.stderr
    assert not set(r.kinds) & {"AdmissionCheck", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
