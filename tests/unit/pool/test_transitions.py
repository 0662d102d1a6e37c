"""Status and Decision changes are typed: a misspelt field fails instead of vanishing.

The ``# type: ignore[...]`` comments are part of the proof: mypy runs with
``warn_unused_ignores``, so if it stopped flagging these calls, ``make lint`` fails.
"""

from __future__ import annotations

from dataclasses import replace
from typing import get_type_hints

import pytest

from atomic_gang_provisioner.api import GangNodePoolStatus, StatusChange
from atomic_gang_provisioner.pool.driver import Decision
from atomic_gang_provisioner.pool.model import update
from tests.support.pools import pool


def test_a_misspelt_status_field_fails() -> None:
    status = pool(phase="Joining").status
    with pytest.raises(TypeError, match="phse"):
        update(status, phse="Idle")  # type: ignore[call-arg]


def test_a_status_change_keeps_every_other_field() -> None:
    status = pool(phase="Joining", readyCount=3).status
    changed = update(status, phase="Satisfied")
    assert (changed.phase, changed.readyCount) == ("Satisfied", 3)


def test_a_misspelt_turn_field_fails() -> None:
    decision = Decision(status=pool().status)
    with pytest.raises(TypeError, match="requeue_afterr"):
        replace(decision, requeue_afterr=1.0)  # type: ignore[call-arg]


def test_the_typed_change_names_every_status_field() -> None:
    """A field added to the status must be added to StatusChange too (and vice versa)."""
    assert set(get_type_hints(StatusChange)) == set(GangNodePoolStatus.model_fields)
