"""atomic_gang_fakeaws: moto made to behave like EC2 where the engine depends on it.

Test and demo infrastructure, never imported by the services. Patches moto's
dispatch and a few backends (see docs/development.md, "Simulated EC2") and exposes a control
API. In-process: ``with mock_aws(), installed() as fake: ...``. Separate
process: ``python -m atomic_gang_fakeaws serve --port N`` plus
:class:`ControlClient`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from atomic_gang_fakeaws.control import ControlClient, FakeAws
from atomic_gang_fakeaws.patches import install_patches
from atomic_gang_fakeaws.rules import Rule
from atomic_gang_fakeaws.state import FakeState, activated, utcnow


@contextmanager
def installed(
    *,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], datetime] = utcnow,
    throttling: bool = True,
) -> Iterator[FakeAws]:
    """Activate a fresh layer state for the duration (use inside ``mock_aws``).

    ``clock`` meters throttling; ``wall`` moves reservations (step both in tests).
    """
    install_patches()
    state = FakeState(clock=clock, wall=wall)
    state.throttler.enabled = throttling
    with activated(state):
        yield FakeAws(state)


__all__ = ["ControlClient", "FakeAws", "FakeState", "Rule", "install_patches", "installed"]
