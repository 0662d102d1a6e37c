"""``atomic-gang explain``: the one reason a gang Job waits, and its timeline (pure parts).

The e2e test (tests/e2e/system/test_operator_view.py) runs it against the real stack
with a read-only identity; these cover every reason from hand-written objects.
"""

from __future__ import annotations

from typing import Any

import pytest

from atomic_gang import keys
from atomic_gang_cli.explain import render, timeline
from atomic_gang_cli.main import target
from atomic_gang_cli.why import Seen, verdict

UID = "wl-uid"
CHECK = "atomic-gang-check"


def cond(
    type_: str, status: str, reason: str = "", message: str = "", at: str = "12:00:00"
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": f"2026-12-01T{at}Z",
    }


def job(**conditions: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "train",
            "namespace": "team-a",
            "uid": "job-uid",
            "creationTimestamp": "2026-12-01T11:59:00Z",
            "labels": {keys.POOL: "train-4", keys.QUEUE_NAME_LABEL: "atomic-gang-queue"},
            "annotations": {keys.COUNT: "4", keys.INSTANCE_TYPE: "p4d.24xlarge"},
        },
        "status": {"conditions": [cond(t, "True", at=a) for t, a in conditions.items()]},
    }


def workload(*conds: dict[str, Any], state: str = "Pending", message: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "job-train-1a2b3",
            "uid": UID,
            "creationTimestamp": "2026-12-01T11:59:01Z",
        },
        "status": {
            "conditions": list(conds),
            "admissionChecks": [
                {
                    "name": CHECK,
                    "state": state,
                    "message": message,
                    "lastTransitionTime": "2026-12-01T12:00:02Z",
                }
            ],
        },
    }


RESERVED = cond(
    "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", "12:00:01"
)
ACTIVE = {
    "spec": {"controllerName": "x"},
    "status": {"conditions": [cond("Active", "True", "Active")]},
}


def pool(*conds: dict[str, Any], claim: str = f"{UID}@20261201T120001Z") -> dict[str, Any]:
    return {
        "metadata": {"name": "train-4"},
        "status": {"claimKey": claim, "conditions": list(conds)},
    }


def seen(wl: dict[str, Any] | None = None, p: dict[str, Any] | None = None, **kw: Any) -> Seen:
    return Seen(
        owner=kw.pop("j", job()),
        workload=wl,
        check_name=CHECK if wl else "",
        check=kw.pop("check", ACTIVE),
        pool=p,
        **kw,
    )


@pytest.mark.parametrize(
    ("s", "waiting", "reason", "detail"),
    [
        pytest.param(seen(j=job(Complete="12:10:00")), False, "the Job is Complete", "", id="done"),
        pytest.param(
            seen(), True, "no Workload yet", "LocalQueue atomic-gang-queue", id="no-workload"
        ),
        pytest.param(
            seen(
                workload(
                    cond(
                        "QuotaReserved",
                        "False",
                        "Pending",
                        "couldn't assign flavors to pod set main: insufficient quota for cpu",
                    )
                )
            ),
            True,
            "quota",
            "insufficient quota for cpu",
            id="quota",
        ),
        pytest.param(
            seen(
                workload(RESERVED),
                pool(
                    cond(
                        "CapacityShortfall",
                        "True",
                        "InsufficientCapacity",
                        "Attempt 3/10 fell short: InsufficientCapacity: no p4d in us-east-1a",
                    ),
                    cond("Ready", "False", "InsufficientCapacity", "Acquiring"),
                ),
            ),
            True,
            "capacity shortfall 3/10",
            "no p4d in us-east-1a",
            id="shortfall",
        ),
        pytest.param(
            seen(
                workload(RESERVED),
                pool(
                    cond(
                        "Ready",
                        "False",
                        "Joining",
                        "Launched 4×p4d.24xlarge (group g1); 3/4 nodes Ready; join deadline 12:15Z",
                    )
                ),
            ),
            True,
            "joining 3/4",
            "3/4 nodes Ready",
            id="joining",
        ),
        pytest.param(
            seen(
                workload(RESERVED),
                pool(
                    cond(
                        "Ready",
                        "False",
                        "Acquiring",
                        "Capacity Block cr-0abc starts at 2026-12-03T11:30:00Z (in 3h12m)",
                    )
                ),
            ),
            True,
            "waiting for the capacity block to start",
            "cr-0abc",
            id="block",
        ),
        pytest.param(
            seen(
                workload(
                    RESERVED,
                    state="Rejected",
                    message="Cannot acquire 4×p4d: InvalidAMIID.NotFound; fix the ami-id",
                )
            ),
            True,
            "a permanent error",
            "fix the ami-id",
            id="rejected",
        ),
        pytest.param(
            seen(
                workload(RESERVED),
                pool(
                    cond(
                        "Failed",
                        "True",
                        "UnauthorizedOperation",
                        "Cannot acquire: denied. Retrying will not help until this is fixed",
                    )
                ),
            ),
            True,
            "a permanent error",
            "Retrying will not help",
            id="pool-failed",
        ),
        pytest.param(
            seen(
                workload(RESERVED), pool(cond("Ready", "False", "Acquiring", "x"), claim="other@t")
            ),
            True,
            "the pool is busy with another claim",
            "",
            id="busy",
        ),
        pytest.param(
            seen(
                workload(RESERVED),
                None,
                check={
                    "status": {
                        "conditions": [cond("Active", "False", "CloudUnavailable", "no EC2")]
                    }
                },
            ),
            True,
            f"AdmissionCheck {CHECK} is not Active",
            "CloudUnavailable: no EC2",
            id="inactive",
        ),
        pytest.param(
            seen(workload(RESERVED, cond("Admitted", "True", "Admitted", "admitted by cq"))),
            False,
            "admitted",
            "admitted by cq",
            id="admitted",
        ),
        pytest.param(
            seen(
                workload(RESERVED, cond("Admitted", "True", "Admitted", "admitted by cq")),
                pool(
                    cond(
                        "Ready",
                        "True",
                        "Repairing",
                        "Repairing 1 of 4 nodes of group train-4-g1: i-1 (n1): "
                        "AcceleratedHardwareReady=False (NvidiaXID79Error) since 12:03:04Z; "
                        "3 kept; launching 1 replacement(s); repair deadline 12:18:04Z",
                    )
                ),
            ),
            True,
            "repairing 1 of 4 nodes",
            "AcceleratedHardwareReady=False (NvidiaXID79Error)",
            id="repairing",
        ),
        pytest.param(
            seen(
                workload(RESERVED, cond("Admitted", "True", "Admitted", "admitted by cq")),
                pool(cond("Ready", "True", "Repairing", "Repairing 1 of 4 nodes"), claim="x@t"),
            ),
            False,
            "admitted",
            "admitted by cq",
            id="another-claims-repair",
        ),
        pytest.param(
            seen(denied=("workloads in team-a (403 Forbidden)",)),
            True,
            "unknown",
            "may not list Workloads",
            id="forbidden",
        ),
    ],
)
def test_the_one_reason(s: Seen, waiting: bool, reason: str, detail: str) -> None:
    v = verdict(s)
    assert (v.waiting, v.reason) == (waiting, reason)
    assert detail in v.detail


def ev(kind: str, at: str, message: str, count: int = 1) -> dict[str, Any]:
    return {
        "involvedObject": {"kind": kind, "name": "x"},
        "reason": "InsufficientCapacity",
        "message": message,
        "count": count,
        "lastTimestamp": f"2026-12-01T{at}Z",
    }


def test_timeline_is_in_order_and_folds_mirrored_and_repeated_events() -> None:
    """The pool's Events are mirrored onto the Job and the Workload ("Pool p: ..."), and
    every attempt repeats them: one line per reason, counted once per object."""
    events = (
        ev("GangNodePool", "12:00:25", "attempt 1/10"),
        ev("Job", "12:00:25", "Pool train-4: attempt 1/10"),
        ev("GangNodePool", "12:00:30", "attempt 2/10", count=2),
        ev("Workload", "12:00:31", "Pool train-4: (combined from similar events): attempt 3/10"),
    )
    s = seen(
        workload(RESERVED),
        pool(
            cond(
                "CapacityShortfall",
                "True",
                "InsufficientCapacity",
                "Attempt 3/10 fell short",
                "12:00:20",
            )
        ),
        events=events,
    )
    got = [(e.at.strftime("%H:%M:%S"), e.who, e.what) for e in timeline(s)]
    assert got == [
        ("11:59:00", "Job", "created"),
        ("11:59:01", "Workload", "created: job-train-1a2b3"),
        ("12:00:01", "Workload", "QuotaReserved=True QuotaReserved"),
        ("12:00:02", "check", f"{CHECK}=Pending"),
        ("12:00:20", "GangNodePool", "CapacityShortfall=True InsufficientCapacity"),
        ("12:00:25", "event", "InsufficientCapacity ×3, last 12:00:31Z"),
    ]
    assert timeline(s)[-1].detail == "attempt 3/10"
    text = render(s, limit=4)
    assert text.startswith("Job team-a/train: gang 4×p4d.24xlarge, pool train-4\n")
    assert "… 2 earlier entries" in text
    assert "11:59:00" not in text
    assert text.rstrip().endswith("Attempt 3/10 fell short")
    assert "Waiting for: capacity shortfall 3/10" in text


def test_what_rbac_hid_is_said() -> None:
    text = render(seen(denied=("events in default (403 Forbidden)",)))
    assert "(could not read events in default (403 Forbidden))" in text


def test_a_requeued_workload_says_which_attempt_it_is() -> None:
    wl = workload(RESERVED)
    wl["status"]["admissionChecks"][0]["retryCount"] = 2
    lines = render(seen(wl)).splitlines()
    assert (
        lines[1] == "attempt 3: Kueue requeued the Workload after 2 evictions by our check's Retry"
    )
    first = workload(RESERVED)
    assert "attempt" not in render(seen(first)).splitlines()[1]


def a_jobset(**conditions: str) -> dict[str, Any]:
    return {**job(**conditions), "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}


def test_a_jobset_is_named_as_a_jobset_and_done_by_its_own_condition() -> None:
    waiting = seen(workload(RESERVED), j=a_jobset())
    assert render(waiting).splitlines()[0] == (
        "JobSet team-a/train: gang 4×p4d.24xlarge, pool train-4"
    )
    assert timeline(waiting)[0].who == "JobSet"
    done = verdict(seen(j=a_jobset(Completed="12:10:00")))
    assert (done.waiting, done.reason) == (False, "the JobSet is Completed")
    # A Job's "Complete" is not a JobSet's word for done.
    assert verdict(seen(workload(RESERVED), j=a_jobset(Complete="12:10:00"))).waiting


@pytest.mark.parametrize(
    ("arg", "found"),
    [
        ("team-a/train", ("Job", "team-a", "train")),
        ("job/team-a/train", ("Job", "team-a", "train")),
        ("jobset/team-a/allreduce", ("JobSet", "team-a", "allreduce")),
        ("JobSet/team-a/allreduce", ("JobSet", "team-a", "allreduce")),
        ("trainjob/team-a/llama", ("TrainJob", "team-a", "llama")),
        ("train", None),
        ("pod/team-a/train", None),
        ("jobset/team-a/", None),
        ("a/b/c/d", None),
    ],
)
def test_explain_takes_a_job_or_a_jobset(arg: str, found: tuple[str, str, str] | None) -> None:
    assert target(arg) == found


def test_a_trainjob_is_named_as_a_trainjob_and_done_by_complete() -> None:
    trainjob = {**job(Complete="12:10:00"), "kind": "TrainJob"}
    done = verdict(seen(j=trainjob))
    assert (done.waiting, done.reason) == (False, "the TrainJob is Complete")
    assert render(seen(workload(RESERVED), j={**job(), "kind": "TrainJob"})).startswith(
        "TrainJob team-a/train:"
    )
