"""Only a classified cloud error changes the cloud health the AdmissionCheck's
``Active`` condition shows. A malformed pool, lost leadership or a bug is logged
(naming the pool), counted in ``atomic_gang_reconcile_errors_total{controller=
"reaper"}``, and the sweep goes on with the other pools."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.error_codes import CloudError
from atomic_gang_provisioner.cloud.values import ReleaseResult
from atomic_gang_provisioner.reconcilers.context import NotLeaderError
from atomic_gang_provisioner.reconcilers.reaper import Reaper
from tests.support.fakecloud import FakeCloud
from tests.support.jobs import settings
from tests.support.kubefakes import FakeCache, RecordingTransport, context
from tests.support.pools import T0, launched
from tests.unit.reaper.test_sweep import listing, managed, orphan

HOUR = timedelta(hours=1)


def good_pool() -> dict[str, Any]:
    obj = launched().to_dict()
    obj["metadata"]["name"] = "good"
    return obj


def malformed_pool() -> dict[str, Any]:
    """A pool object this release cannot read at all (here: a phase it does not know)."""
    obj = launched().to_dict()
    obj["metadata"]["name"] = "broken"
    obj["status"]["phase"] = "Hibernating"
    return obj


def reaper(
    cloud: FakeCloud,
    *,
    pools: list[dict[str, Any]] | None = None,
    leading: bool = True,
    probe: Any = None,
) -> Reaper:
    ctx = replace(
        context(
            settings=settings(),
            transport=RecordingTransport(),
            pools=FakeCache(pools or []),
            leading=lambda: leading,
            now=lambda: T0,
        ),
        janitor=cloud,
    )
    return Reaper(ctx, interval=60, probe=probe)


def reaper_errors(r: Reaper) -> float:
    value = r.ctx.metrics.registry.get_sample_value(
        "atomic_gang_reconcile_errors_total", {"controller": "reaper"}
    )
    return value or 0.0


def test_a_malformed_pool_is_skipped_not_reported_as_ec2_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good_ids = launched().status.instanceIds
    cloud = listing(
        orphan("i-orphan"),
        managed("i-of-broken", "broken", generation=1, age=HOUR),
        *(managed(i, "good", generation=1, age=HOUR) for i in good_ids),
    )
    r = reaper(cloud, pools=[good_pool(), malformed_pool()])
    with caplog.at_level("WARNING", logger="atomic_gang_provisioner.reaper"):
        assert r.sweep() == {"orphaned": 1}
    # The other pools were swept; the unreadable pool's instances are left alone (it
    # exists, so they are not orphans) until a replica that can read it decides.
    assert [q.instance_ids for q in cloud.requests("release")] == [("i-orphan",)]
    assert r.ctx.cloud_health.error == ""
    assert reaper_errors(r) == 1
    (record,) = [x for x in caplog.records if getattr(x, "pool", None) == "broken"]
    assert "Hibernating" in str(getattr(record, "error", ""))


def test_lost_leadership_is_not_cloud_ill_health() -> None:
    r = reaper(listing(orphan("i-1")), leading=False)
    r.ctx.cloud_health.report("")
    with pytest.raises(NotLeaderError):
        r.sweep()
    assert r.ctx.cloud_health.error == ""
    assert r.ctx.cloud_health.probes == {"ec2": ""}
    assert reaper_errors(r) == 1


def test_a_bug_in_a_sweep_leaves_the_last_cloud_verdict_alone() -> None:
    broken = FakeCloud()
    broken.next("list_owned", KeyError("a bug, not EC2"))
    r = reaper(broken)
    r.ctx.cloud_health.report("CloudError: RequestLimitExceeded: slow down")
    with pytest.raises(KeyError):
        r.sweep()
    assert r.ctx.cloud_health.error == "ec2: CloudError: RequestLimitExceeded: slow down"
    assert reaper_errors(r) == 1


def test_a_cloud_error_is_reported_and_counted() -> None:
    refused = FakeCloud()
    refused.next("list_owned", CloudError("UnauthorizedOperation", "not allowed"))
    r = reaper(refused)
    with pytest.raises(CloudError):
        r.sweep()
    assert "UnauthorizedOperation" in r.ctx.cloud_health.error
    assert reaper_errors(r) == 1
    # the next listing answers (with nothing listed)
    r.sweep()
    assert r.ctx.cloud_health.error == ""


def test_a_failed_release_is_neither_ill_health_nor_a_crash() -> None:
    """A release error comes back as a result (retried next sweep), not as a raise."""
    failed = ReleaseResult(
        reason=FailureReason.THROTTLED, message="RequestLimitExceeded: slow down"
    )
    cloud = listing(orphan("i-1"))
    cloud.next("release", failed)
    r = reaper(cloud)
    assert r.sweep() == {}
    assert r.ctx.cloud_health.error == ""
    assert reaper_errors(r) == 0


@pytest.mark.parametrize(
    ("raised", "verdict"),
    [
        pytest.param(
            CloudError("ResourceNotFoundException", "no cluster c"),
            "cluster: CloudError: ResourceNotFoundException: no cluster c",
            id="cloud-error-reported",
        ),
        pytest.param(TypeError("a bug"), "cluster: was down", id="bug-not-reported"),
        pytest.param(None, "", id="recovered"),
    ],
)
def test_the_cluster_probe_reports_only_cloud_errors(
    raised: Exception | None, verdict: str
) -> None:
    def probe() -> None:
        if raised is not None:
            raise raised

    r = reaper(FakeCloud(), probe=probe)
    r.ctx.cloud_health.report("was down", probe="cluster")
    r.sweep()
    assert r.ctx.cloud_health.error == verdict
    assert reaper_errors(r) == (0 if raised is None else 1)


def test_the_start_up_check_reports_only_cloud_errors() -> None:
    """main's warm-up goes through the same probe: a bug there is no CloudUnavailable."""

    def probe() -> None:
        raise AttributeError("a bug")

    r = reaper(FakeCloud(), probe=probe)
    r.check_cluster()
    assert r.ctx.cloud_health.error == ""
    assert reaper_errors(r) == 1

    def down() -> None:
        raise CloudError("ResourceNotFoundException", "no cluster c")

    r._probe = down
    r.check_cluster()
    assert r.ctx.cloud_health.failing("cluster")
