"""The order in which pools spend EC2's launch budget: longest-waiting first.

A pool asks before its launch call. It may go when the launch bucket holds a token
for it and one for each pool ahead of it in the line; otherwise it is told how many
pools are ahead and when to ask again, and no call is sent. The pool's place is kept
by when its acquisition started, so a retry (EC2 throttled the launch anyway) goes
first again, with the same ClientToken.
"""

from __future__ import annotations

from collections.abc import Callable

from atomic_gang_provisioner.api.reasons import FailureReason
from atomic_gang_provisioner.cloud.turns.budget import ApiBudget
from atomic_gang_provisioner.cloud.turns.waitline import WaitLine
from atomic_gang_provisioner.cloud.values import AcquireRequest, Waiting

HOLD_SLACK_SECONDS = 30.0  # beyond the told wait, before a silent pool loses its place
MIN_RETRY_SECONDS = 0.05


def budget_message(ahead: int) -> str:
    if ahead == 0:
        return "waiting for EC2's launch budget: next in line"
    return f"waiting for EC2's launch budget: {ahead} pool{'s' if ahead != 1 else ''} ahead"


def since_of(request: AcquireRequest) -> float:
    return request.waiting_since.timestamp() if request.waiting_since is not None else 0.0


class LaunchGate:
    def __init__(self, *, budget: ApiBudget, clock: Callable[[], float]) -> None:
        self._budget = budget
        self._clock = clock
        self._line = WaitLine()

    def admit(self, request: AcquireRequest, *, operation: str) -> Waiting | None:
        """None: launch now (the call takes the token). Else how long to wait."""
        now = self._clock()
        pool, n = request.pool, request.spec.count
        hold = HOLD_SLACK_SECONDS
        ahead = self._line.ahead(pool, since=since_of(request), now=now, hold=hold)
        instances = n if operation == "run_instances" else 0
        wait = self._budget.wait(operation, instances=instances, reserve=ahead)
        if wait <= 0:
            self._line.leave(pool)
            return None
        # Renew the place for as long as the pool is told to wait, plus the slack.
        self._line.ahead(pool, since=since_of(request), now=now, hold=wait + hold)
        return Waiting(
            reason=FailureReason.WAITING_FOR_LAUNCH_BUDGET,
            message=budget_message(ahead),
            retry_after=max(MIN_RETRY_SECONDS, wait),
        )

    def leave(self, pool: str) -> None:
        self._line.leave(pool)
