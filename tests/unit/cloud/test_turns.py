"""Whose turn it is: EC2's launch budget, longest-waiting first, and short capacity cells."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud.turns.budget import ApiBudget, BucketSpec, BudgetLimits
from atomic_gang_provisioner.cloud.turns.launchgate import LaunchGate
from atomic_gang_provisioner.cloud.turns.short_cells import Cell, CellWait, ShortCells
from atomic_gang_provisioner.cloud.values import AcquireRequest, Waiting
from tests.support.clock import ManualClock

T0 = datetime(2026, 12, 1, tzinfo=UTC)
P4D_A = Cell("p4d.24xlarge", "us-east-1a")


def request(pool: str, waited: int) -> AcquireRequest:
    spec = GangSpec(
        pool=pool,
        count=8,
        instance_type="p4d.24xlarge",
        region="us-east-1",
        node_role_arn="arn:aws:iam::123456789012:role/node",
        keep_warm_ttl=GoDuration.of(minutes=10),
        max_lifetime=GoDuration.of(hours=4),
        mode="runinstances",
        ami_variant="nvidia",
    )
    return AcquireRequest(spec=spec, generation=1, waiting_since=T0 - timedelta(seconds=waited))


def test_the_longest_waiting_pool_launches_first_and_the_others_count_who_is_ahead() -> None:
    clock = ManualClock(start=100.0)
    limits = BudgetLimits(run_instances=BucketSpec(1, 2))
    budget = ApiBudget(limits=limits, clock=clock)
    budget.take("run_instances")  # spent: everyone waits
    gate = LaunchGate(budget=budget, clock=clock)
    answers = {
        p: gate.admit(request(p, w), operation="run_instances")
        for p, w in [("newest", 1), ("oldest", 30), ("middle", 10)]
    }
    assert all(isinstance(a, Waiting) for a in answers.values())
    assert isinstance(answers["newest"], Waiting)
    third = gate.admit(request("newest", 1), operation="run_instances")
    assert isinstance(third, Waiting)
    assert third.message == "waiting for EC2's launch budget: 2 pools ahead"
    assert third.reason == "WaitingForLaunchBudget"
    clock.advance(0.5)  # one token back: only the oldest may take it
    assert isinstance(gate.admit(request("middle", 10), operation="run_instances"), Waiting)
    assert gate.admit(request("oldest", 30), operation="run_instances") is None
    budget.take("run_instances")
    later = gate.admit(request("newest", 1), operation="run_instances")
    assert isinstance(later, Waiting)
    assert later.message == "waiting for EC2's launch budget: 1 pool ahead"
    assert later.retry_after > 0.5  # after the token of the pool ahead of it


def ids(n: int, start: int = 0) -> list[str]:
    return [f"i-{k}" for k in range(start, start + n)]


def turns(cells: ShortCells, *line: tuple[str, float, int]) -> dict[str, CellWait | None]:
    return {p: cells.turn(P4D_A, pool=p, since=s, count=n) for p, s, n in line}


def test_a_known_short_cell_is_probed_by_one_pool_its_longest_waiting() -> None:
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    assert cells.turn(P4D_A, pool="any", since=1.0, count=8) is None  # not known short
    cells.mark_short(P4D_A, 8)  # we hold none there: fewer than 8 fit
    assert cells.turn(P4D_A, pool="b", since=20.0, count=8) == CellWait(0, 5.0)
    assert cells.turn(P4D_A, pool="a", since=10.0, count=8) == CellWait(0, 5.0)  # waited longer
    assert cells.turn(P4D_A, pool="b", since=20.0, count=8) == CellWait(1)
    assert cells.turn(P4D_A, pool="c", since=30.0, count=8) == CellWait(2)
    assert CellWait(2).describe() == "2 gangs ahead"
    assert CellWait(0, 4.6).describe() == "next try in 5s"
    clock.advance(5)
    assert cells.turn(P4D_A, pool="a", since=10.0, count=8) is None  # a's probe is due
    assert cells.turn(P4D_A, pool="b", since=20.0, count=8) == CellWait(1)
    assert str(P4D_A) == "p4d.24xlarge in us-east-1a"


def test_a_release_lets_in_the_gangs_that_fit_under_the_floor_in_line_order() -> None:
    """We held 6 when 8 more did not fit: 6 fit for sure. With 2 of them released, the
    2-gang launches at once; the 8-gang (that may fit under the ceiling of 13) is the one
    that probes; the others wait, and nobody is sent into a sure shortfall."""
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    cells.launched(P4D_A, "old", ids(6))
    cells.mark_short(P4D_A, 8)
    line = [("eight", 10.0, 8), ("four", 20.0, 4), ("two", 30.0, 2), ("late2", 40.0, 2)]
    turns(cells, *line)
    cells.released(ids(2))
    assert turns(cells, *line) == {
        "eight": CellWait(0, 1.0),  # may fit under the ceiling: it probes, a second later
        "four": CellWait(1),
        "two": None,
        "late2": CellWait(3),
    }
    cells.launched(P4D_A, "two", ids(2, start=10))  # we hold 6 again: none sure free
    clock.advance(1)  # 7 may fit under the ceiling: the 4 probes, the 8 cannot fit there
    assert turns(cells, ("eight", 10.0, 8), ("four", 20.0, 4), ("late2", 40.0, 2)) == {
        "eight": CellWait(0),
        "four": None,
        "late2": CellWait(2),
    }


def test_a_shortfall_lowers_the_ceiling_and_a_smaller_gang_probes_under_it() -> None:
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    line = [("eight", 10.0, 8), ("four", 20.0, 4), ("two", 30.0, 2)]
    cells.mark_short(P4D_A, 8)  # fewer than 8 fit: the 4 probes, a second later
    turns(cells, *line)  # they take their places
    assert turns(cells, *line) == {
        "eight": CellWait(0),
        "four": CellWait(1, 1.0),
        "two": CellWait(2),
    }
    clock.advance(1)
    assert cells.turn(P4D_A, pool="four", since=20.0, count=4) is None
    cells.mark_short(P4D_A, 4)  # fewer than 4 fit: the 2 probes next
    clock.advance(1)
    assert turns(cells, *line) == {"eight": CellWait(0), "four": CellWait(1), "two": None}
    cells.mark_short(P4D_A, 2)  # fewer than 2: nobody fits; the first probes for the outside
    assert turns(cells, *line)["eight"] == CellWait(0, 3.0)  # 5 s after the first shortfall


def test_outside_probes_back_off_and_a_launch_over_the_ceiling_tries_twice_the_floor() -> None:
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    cells.mark_short(P4D_A, 8)
    waits = []
    for _ in range(5):
        wait = cells.turn(P4D_A, pool="a", since=1.0, count=8)
        assert wait is not None
        waits.append(wait.probe_in)
        clock.advance(wait.probe_in)
        assert cells.turn(P4D_A, pool="a", since=1.0, count=8) is None
        cells.mark_short(P4D_A, 8)  # the probe came back short
    assert waits == [5.0, 10.0, 10.0, 10.0, 10.0]
    clock.advance(15)
    assert cells.turn(P4D_A, pool="a", since=1.0, count=8) is None
    cells.launched(P4D_A, "a", ids(8))  # 8 fit after all: the outside freed some
    line = [("b", 150.0, 8), ("c", 151.0, 8), ("d", 152.0, 4)]  # waiting under a minute
    turns(cells, *line)  # no ceiling known: twice the floor (16, we hold 8) is tried
    assert turns(cells, *line) == {"b": None, "c": CellWait(1, 1.0), "d": CellWait(2)}
    cells.launched(P4D_A, "b", ids(8, start=8))  # 16 fit: 32 are tried
    assert turns(cells, ("c", 151.0, 8), ("d", 152.0, 4)) == {"c": None, "d": None}
    cells.mark_short(P4D_A, 8)  # but not 24: a ceiling again, the floor is what we hold
    assert cells.turn(P4D_A, pool="d", since=152.0, count=4) == CellWait(1, 1.0)  # d probes


def test_a_gang_waiting_135_s_is_owed_the_room_freed_next() -> None:
    """Without it, 2-gangs take every 2 slots a release frees and the 8-gang ahead of them
    waits for ever. We held 6 when 8 more did not fit (6 fit, fewer than 14)."""
    for waited, two in [(134.0, None), (135.0, CellWait(1))]:
        clock = ManualClock(start=100.0)
        cells = ShortCells(clock=clock)
        cells.launched(P4D_A, "old", ids(6))
        cells.mark_short(P4D_A, 8)
        line = [("eight", clock() + 1 - waited, 8), ("two", clock() - 10, 2)]
        turns(cells, *line)
        cells.released(ids(4))  # 4 sure free: the 2 fits them, the 8 does not
        clock.advance(1)  # the 8 has waited `waited` seconds now
        assert turns(cells, *line) == {"eight": None, "two": two}  # the 8 probes under 13


def test_owed_after_zero_is_strict_arrival_order() -> None:
    """ec2Api.shortCellOwedAfterSeconds: 0: a gang that just arrived is owed already."""
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock, owed_after_seconds=0)
    cells.launched(P4D_A, "old", ids(6))
    cells.mark_short(P4D_A, 8)
    line = [("eight", clock(), 8), ("two", clock() + 0.5, 2)]
    turns(cells, *line)
    cells.released(ids(4))
    clock.advance(1)
    assert turns(cells, *line) == {"eight": None, "two": CellWait(1)}


def test_a_gang_the_cell_cannot_hold_at_all_is_owed_nothing() -> None:
    """Fewer than 8 fit even with nothing of ours there: the 8-gang waits for capacity
    freed outside, and the 2-gang behind it probes the room the cell may have."""
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    cells.mark_short(P4D_A, 8)  # we hold none: the ceiling is 7
    line = [("eight", clock() - 300, 8), ("two", clock() - 10, 2)]
    turns(cells, *line)
    clock.advance(1)
    assert turns(cells, *line) == {"eight": CellWait(0), "two": None}


def test_a_shortfall_under_the_floor_brings_the_floor_down() -> None:
    cells = ShortCells(clock=ManualClock(start=100.0))
    cells.launched(P4D_A, "held", ids(4))
    cells.mark_short(P4D_A, 8)  # 4 fit
    cells.released(ids(4))
    assert cells.turn(P4D_A, pool="four", since=1.0, count=4) is None  # under the floor
    cells.mark_short(P4D_A, 4)  # the outside took some: fewer than 4 fit now
    assert cells.turn(P4D_A, pool="two", since=2.0, count=2) is None  # 3 still do
    assert cells.turn(P4D_A, pool="four", since=1.0, count=4) == CellWait(0, 5.0)


def test_a_release_names_the_pools_in_line_for_the_room_it_freed() -> None:
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    other = Cell("p5.48xlarge", "us-east-1a")
    cells.launched(P4D_A, "held", ids(4))
    cells.launched(other, "held-p5", ids(2, start=10))
    cells.mark_short(P4D_A, 8)
    turns(cells, ("eight", 10.0, 8), ("four", 20.0, 4))  # they take their places
    assert cells.released(ids(2)) == ("eight", "four")
    assert cells.released(ids(2)) == ()  # a retry frees nothing more: nobody to wake
    assert cells.released(ids(2, start=10)) == ()  # a cell not known short has no line


def test_a_retried_release_counts_its_instances_once() -> None:
    cells = ShortCells(clock=ManualClock(start=100.0))
    cells.launched(P4D_A, "held", ids(4))
    cells.mark_short(P4D_A, 4)  # 4 fit, fewer than 8
    for _ in range(3):
        cells.released(ids(2))
    cells.released(["i-unknown"])
    assert cells.turn(P4D_A, pool="two", since=2.0, count=2) is None  # 2 free, not 6
    assert cells.turn(P4D_A, pool="four", since=1.0, count=4) == CellWait(0, 1.0)  # probes
    other = Cell("p5.48xlarge", "us-east-1a")
    cells.mark_short(other, 2)
    cells.released(ids(2, start=2))  # p4d instances: nothing for the p5 cell
    assert cells.turn(other, pool="c", since=3.0, count=2) == CellWait(0, 5.0)


def test_a_short_mark_expires_after_its_ttl() -> None:
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock, ttl_seconds=60)
    cells.mark_short(P4D_A, 8)
    clock.advance(61)
    assert cells.turn(P4D_A, pool="a", since=1.0, count=8) is None


def test_short_cell_seconds_zero_turns_the_cache_off() -> None:
    """ec2Api.shortCellSeconds: 0 (what bench.idle_cost compares against): every pool
    probes on its own backoff, as before the cache."""
    cells = ShortCells(clock=ManualClock(start=100.0), ttl_seconds=0)
    cells.mark_short(P4D_A, 8)
    assert cells.turn(P4D_A, pool="a", since=1.0, count=8) is None
    assert cells.turn(P4D_A, pool="b", since=2.0, count=8) is None


def test_a_placement_groups_shortfall_is_its_own_cell() -> None:
    """A cluster group holds its own capacity: one pool's group coming back short does
    not make a pool with another group wait (nor the AZ without a group)."""
    clock = ManualClock(start=100.0)
    cells = ShortCells(clock=clock)
    mine = Cell("p4d.24xlarge", "us-east-1a", placement_group="atomic-gang-c-a-1")
    cells.mark_short(mine, 8)
    clock.advance(5)
    assert cells.turn(mine, pool="a", since=1.0, count=8) is None  # a, alone, probes it
    other = Cell("p4d.24xlarge", "us-east-1a", placement_group="atomic-gang-c-b-2")
    assert cells.turn(other, pool="b", since=2.0, count=8) is None
    assert cells.turn(P4D_A, pool="c", since=3.0, count=8) is None
    assert str(mine) == "p4d.24xlarge in us-east-1a (group atomic-gang-c-a-1)"
