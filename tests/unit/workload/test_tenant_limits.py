"""The provisioner re-validates every Job from its annotations with the same rules as
the webhook: a Job that reached Kueue without the webhook (installed with
``webhook.enabled=false``, or created while it was registered with failurePolicy
Ignore) still cannot pick an image, subnet, reservation or lifetime the admin did not
allow."""

from __future__ import annotations

import pytest

from atomic_gang import keys
from tests.support.jobs import gang_job, settings
from tests.unit.workload.test_decide import run

STRICT = settings(
    allowedAmiIds=["ami-0123456789abcdef0"],
    allowedSubnets=["subnet-0123456789abcdef0"],
    allowedCapacityReservationIds=["cr-0aa*"],
    limits={"maxGangSize": 64, "maxKeepWarmTTL": "24h", "maxLifetime": "12h"},
)


@pytest.mark.parametrize(
    ("annotations", "reason"),
    [
        pytest.param({keys.AMI_ID: "ami-0fffffffffffffff0"}, "AmiNotAllowed", id="ami"),
        pytest.param(
            {keys.AVAILABILITY_ZONES: None, keys.SUBNETS: "subnet-0fffffffffffffff0"},
            "SubnetNotAllowed",
            id="subnet",
        ),
        pytest.param(
            {keys.CAPACITY_RESERVATION_ID: "cr-0bb456789abcdef01"},
            "CapacityReservationNotAllowed",
            id="reservation",
        ),
        pytest.param({keys.MAX_LIFETIME: "13h"}, "MaxLifetimeExceedsLimit", id="lifetime"),
    ],
)
def test_the_controller_rejects_what_the_admin_did_not_allow(
    annotations: dict[str, str | None], reason: str
) -> None:
    plan = run(owner=gang_job(annotations=annotations), settings=STRICT)
    assert plan.create_pool is None
    (check,) = plan.checks
    assert check.state == "Rejected"
    assert f"[{reason}]" in check.message


def test_the_controller_accepts_what_the_admin_allowed() -> None:
    job = gang_job(
        annotations={
            keys.AMI_ID: "ami-0123456789abcdef0",
            keys.CAPACITY_RESERVATION_ID: "cr-0aa456789abcdef01",
            keys.MAX_LIFETIME: "12h",
        }
    )
    plan = run(owner=job, settings=STRICT)
    assert plan.create_pool is not None
    assert plan.create_pool.spec.shape.amiId == "ami-0123456789abcdef0"
