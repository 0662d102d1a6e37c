"""The GangNodePool state machine: pure decisions, one module per phase.

``machine.decide(pool, observed, now)`` dispatches on ``status.phase`` to the
phase module's ``decide`` and returns a :class:`~.model.Plan`. The reconciler's
executor performs the plan's single cloud call, feeds the result back through
``machine.after_acquire`` / ``machine.after_release`` (also pure), then writes
status once. Nothing here does I/O, sleeps or reads the clock.
"""
