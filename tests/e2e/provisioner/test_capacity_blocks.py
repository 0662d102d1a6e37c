"""Capacity Blocks and reservations on the real control plane + simulated EC2, whose
clock is real time here: blocks a minute or two long, with the controller's drain lead
just past EC2's own 30 minutes (capacityBlock.drainLeadSeconds 1815), so a block
drains seconds after it starts. Each scenario reads the layer's call log for what was
launched, when, and into which reservation."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from atomic_gang_provisioner.api import GangNodePool
from atomic_gang_provisioner.timestamps import rfc3339
from tests.e2e.kube import Kube
from tests.e2e.names import gnp
from tests.e2e.provisioner.conftest import FIGURES, job, unique
from tests.e2e.provisioner.harness import Replicas, World, iter_pods
from tests.e2e.provisioner.test_lifecycle import events_on, wait_event
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

TYPE, ZONE = "p4d.24xlarge", "us-east-1a"
DRAIN_LEAD = 1815  # the drain point: 15 s before the layer terminates a block itself
EC2_LEAD = timedelta(minutes=30)


@pytest.fixture(scope="module")
def replica(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    reps = world.replicas(
        tmp_path_factory.mktemp("prov-blocks"),
        unique("lease"),
        joinDeadlineSeconds=300,
        acquireAttemptsBeforeRetry=200,
        capacityBlock={
            "drainLeadSeconds": DRAIN_LEAD,
            "minRemainingSeconds": 5,
            "warningLeadSeconds": 10,
        },
    )
    reps.start("prov-cb")
    wait_for(
        lambda: world.lease_holder(reps.lease).startswith("prov-cb"),
        timeout=30,
        what="prov-cb leading",
    )
    yield reps
    reps.stop_all()


def rid() -> str:
    return "cr-" + uuid.uuid4().hex[:17]


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def reserve(world: World, **fields: Any) -> str:
    cr = rid()
    fields.setdefault("instance_type", TYPE)
    world.fake.add_reservation(cr, zone=ZONE, count=2, **fields)
    return cr


def block_ending_in(world: World, seconds: float, *, start: datetime | None = None) -> str:
    """A block active from ``start`` (default now) whose drain point is ``seconds`` away."""
    begin = start or now() - timedelta(seconds=5)
    end = now() + timedelta(seconds=DRAIN_LEAD + seconds)
    return reserve(world, kind="capacity-block", start_date=begin, end_date=end)


def message_has(world: World, submitted: dict[str, Any], text: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        c = world.check(submitted)
        return c if text in c.get("message", "") else None

    return wait_for(probe, timeout=30, what=f"the check to say {text!r}")


def targets(call: dict[str, Any]) -> str:
    """The reservation a launch call targeted (RunInstances, or a fleet's template)."""
    params = call["params"]
    return next((v for k, v in params.items() if k.endswith("CapacityReservationId")), "")


def joined(world: World, pool: str, what: str, pred: Any = None) -> GangNodePool:
    p = world.wait_pool(
        pool,
        lambda p: p.status.phase == "Joining" and (pred is None or pred(p)),
        timeout=90,
        what=what,
    )
    world.register_nodes(p)
    return p


def completes(world: World, submitted: dict[str, Any], namespace: str) -> None:
    world.wait_check(submitted, "Ready", timeout=60)
    wait_for(
        lambda: (
            [q for q in iter_pods(world, namespace) if q["status"].get("phase") == "Succeeded"]
            or None
        ),
        timeout=90,
        what="pods completed",
    )


def test_1_a_gang_waits_for_its_block_and_launches_the_second_it_starts(
    world: World, replica: Replicas, namespace: str
) -> None:
    label, start = unique("cb-start"), now() + timedelta(seconds=60)
    pool = gnp(namespace, label)
    cr = reserve(world, kind="capacity-block", start_date=start, end_date=start + EC2_LEAD * 2)
    submitted = world.submit(
        job("cb-start", namespace, pool=label, count=2, capacity_reservation_id=cr)
    )
    check = message_has(world, submitted, f"Capacity Block {cr} starts at {rfc3339(start)} (in ")
    assert check["state"] == "Pending"
    assert "nothing billed" in check["message"]
    p = joined(world, pool, "launched at the start")
    launches = world.launches(pool)
    assert launches, "no RunInstances for the pool"
    first = min(c["at"] for c in launches)
    assert start.timestamp() <= first <= start.timestamp() + 1.0, first - start.timestamp()
    assert {targets(c) for c in launches} == {cr}
    FIGURES["block StartDate -> first RunInstances (s)"] = f"{first - start.timestamp():.3f}"
    assert (p.status.reservationId, p.status.capacityBlock) == (cr, True)
    completes(world, submitted, namespace)
    metrics = replica.metrics("prov-cb")
    assert "atomic_gang_capacity_block_wait_seconds_count" in metrics
    assert (
        f'atomic_gang_capacity_reservation_available_instances{{kind="capacity-block",reservation_id="{cr}"}}'
        in metrics
    )


def test_4_a_reservation_of_another_type_is_rejected_without_a_launch(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("cb-mismatch")
    pool = gnp(namespace, label)
    cr = reserve(world, instance_type="p5.48xlarge")
    submitted = world.submit(
        job("cb-mismatch", namespace, pool=label, count=2, capacity_reservation_id=cr)
    )
    rejected = world.wait_check(submitted, "Rejected", timeout=60)
    assert f"{cr} reserves instance type p5.48xlarge; the gang uses {TYPE}" in rejected["message"]
    assert world.launches(pool) == []


def test_3_an_odcr_with_3_of_4_available_waits_for_the_fourth(
    world: World, replica: Replicas, namespace: str
) -> None:
    label, cr = unique("cb-odcr"), rid()
    pool = gnp(namespace, label)
    world.fake.add_reservation(cr, zone=ZONE, instance_type=TYPE, count=4)
    subnet = world.ec2.describe_subnets(Filters=[{"Name": "availability-zone", "Values": [ZONE]}])
    taken = world.ec2.run_instances(
        ImageId="ami-12345678",
        InstanceType=TYPE,
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet["Subnets"][0]["SubnetId"],
        CapacityReservationSpecification={
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": cr},
        },
    )["Instances"][0]["InstanceId"]
    submitted = world.submit(
        job("cb-odcr", namespace, pool=label, count=4, capacity_reservation_id=cr)
    )
    check = message_has(world, submitted, f"{cr}: 3/4 available")
    assert check["state"] == "Pending"
    assert world.launches(pool) == []  # the count is read, not guessed: no launch wasted
    world.ec2.terminate_instances(InstanceIds=[taken])
    p = joined(world, pool, "launched once 4 are free")
    assert {targets(c) for c in world.launches(pool)} == {cr}
    assert len(world.launches(pool)) == 1
    assert p.status.reservationId == cr
    world.wait_check(submitted, "Ready", timeout=60)


def test_2_a_block_ending_drains_the_job_which_finishes_in_the_next_block(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("cb-drain")
    pool = gnp(namespace, label)
    first = block_ending_in(world, 30)
    second = block_ending_in(world, 600)
    listed = f"{first},{second}"
    submitted = world.submit(
        job(
            "cb-drain",
            namespace,
            pool=label,
            count=2,
            runs_for="40s",
            capacity_reservation_id=listed,
        )
    )
    p = joined(world, pool, "launched into the first block")
    assert p.status.reservationId == first
    ids = list(p.status.instanceIds)
    world.wait_check(submitted, "Ready", timeout=60)
    warned = wait_event(world, submitted, "CapacityBlockEnding", "Job")
    assert f"Capacity Block {first} ends at" in warned["message"]
    wl = world.workload(submitted)
    assert wl is not None
    assert wait_event(world, wl, "CapacityBlockEnding", "Workload")
    retry = wait_event(world, wl, "GangRetry", "Workload")
    assert "CapacityBlockEnding" in retry["message"]
    wait_event(world, wl, "EvictedDueToAdmissionCheck", "Workload")  # Kueue evicted it
    # Ours were gone before the layer's own termination at EndDate - 30 min.
    (res,) = world.ec2.describe_capacity_reservations(CapacityReservationIds=[first])[
        "CapacityReservations"
    ]
    ec2_due = res["EndDate"].timestamp() - EC2_LEAD.total_seconds()
    ours = [
        c for c in world.fake.calls("TerminateInstances") if set(ids) & set(c["params"].values())
    ]
    assert ours, "the pool never terminated its block instances"
    assert max(c["at"] for c in ours) < ec2_due
    again = joined(
        world, pool, "launched into the second block", lambda p: p.status.reservationId == second
    )
    assert set(again.status.instanceIds).isdisjoint(ids)
    completes(world, submitted, namespace)
    done = wait_for(
        lambda: [t for t in world.fake.block_terminations() if t["reservationId"] == first] or None,
        timeout=60,
        what="the layer's own end of the first block",
    )
    assert done[0]["instanceIds"] == []  # nothing of ours was left for EC2 to kill


def test_5_min_runtime_longer_than_the_block_starts_in_the_next_one(
    world: World, replica: Replicas, namespace: str
) -> None:
    label = unique("cb-minrt")
    pool = gnp(namespace, label)
    short, longer = block_ending_in(world, 60), block_ending_in(world, 900)
    submitted = world.submit(
        job(
            "cb-minrt",
            namespace,
            pool=label,
            count=2,
            capacity_reservation_id=f"{short},{longer}",
            min_runtime="5m",
        )
    )
    p = joined(world, pool, "launched into the longer block")
    assert p.status.reservationId == longer
    assert {targets(c) for c in world.launches(pool)} == {longer}  # never tried the short one
    completes(world, submitted, namespace)


def test_6_fleet_mode_launches_into_a_block_with_one_create_fleet(
    world: World, replica: Replicas, namespace: str, kube: Kube
) -> None:
    label, cr = unique("cb-fleet"), block_ending_in(world, 900)
    pool = gnp(namespace, label)
    submitted = world.submit(
        job("cb-fleet", namespace, pool=label, count=2, mode="fleet", capacity_reservation_id=cr)
    )
    p = joined(world, pool, "fleet launched into the block")
    fleets = [c for c in world.fake.calls("CreateFleet") if pool in str(c)]
    assert len(fleets) == 1
    params = fleets[0]["params"]
    assert params["TargetCapacitySpecification.DefaultTargetCapacityType"] == "capacity-block"
    assert params["TargetCapacitySpecification.TotalTargetCapacity"] == "2"
    assert len(p.status.instanceIds) == 2
    assert p.status.reservationId == cr
    ready = world.wait_check(submitted, "Ready", timeout=60)
    end = p.status.reservationEnd
    assert end is not None
    assert f"in Capacity Block {cr} (ends {rfc3339(end)}, drained at " in ready["message"]
    wide = kube.run("get", "gnp", pool, "-o", "wide").stdout
    header, row = wide.splitlines()
    assert header.split()[-2:] == ["RESERVATION", "ENDS"]
    assert row.split()[-2:] == [cr, rfc3339(end)]
    FIGURES["kubectl get gnp -o wide"] = "\n" + wide
    completes(world, submitted, namespace)
    assert events_on(world, submitted, "Launched", "Job")


def test_7_a_gang_in_a_block_is_repaired_inside_it(
    world: World, replica: Replicas, namespace: str
) -> None:
    """An instance of a block gang lost: the replacement goes into the same block (the
    room its termination freed), one RunInstances of 1; the check stays Ready."""
    label = unique("cb-repair")
    pool = gnp(namespace, label)
    cr = block_ending_in(world, 600)  # room for 2
    submitted = world.submit(
        job(
            "cb-repair", namespace, pool=label, count=2, runs_for="120s", capacity_reservation_id=cr
        )
    )
    p = joined(world, pool, "launched into the block")
    assert p.status.reservationId == cr
    world.wait_check(submitted, "Ready", timeout=60)
    victim, kept = p.status.instanceIds
    world.ec2.terminate_instances(InstanceIds=[victim])
    world.delete_nodes([f"node-{victim}"])

    def launched(q: GangNodePool) -> bool:
        return q.status.repair is not None and bool(q.status.repair.replacements)

    repairing = world.wait_pool(pool, launched, timeout=60, what="the replacement launched")
    assert repairing.status.repair is not None
    (new,) = repairing.status.repair.replacements
    only_new = repairing.status.model_copy(update={"instanceIds": [new]})
    world.register_nodes(repairing.model_copy(update={"status": only_new}))
    whole = world.wait_pool(
        pool,
        lambda q: q.status.phase == "Satisfied" and q.status.repairs == 1,
        timeout=60,
        what="the gang repaired",
    )
    assert whole.status.reservationId == cr
    assert set(whole.status.instanceIds) == {kept, new}
    ones = [
        c
        for c in world.launches(pool)
        if c["outcome"] == "ok" and c["params"].get("MinCount") == "1"
    ]
    assert len(ones) == 1
    assert targets(ones[0]) == cr  # inside the block, not on-demand
    assert world.check(submitted)["state"] == "Ready"  # admitted throughout
