"""The GangNodePool state machine: one story per phase, told without I/O.

``machine.story(pool, observed, now)`` picks the story of the stored phase (or the
finalizer's); the phase modules under ``phases/`` tell it, asking for what they need
(``story.py``: a describe, a topology read, a launch). ``driver.drive`` runs it against
the reconciler's answers and returns the one :class:`~.driver.Decision` to write. Nothing
here does I/O, sleeps or reads the clock.
"""
