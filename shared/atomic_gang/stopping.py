"""How a long-running process waits for SIGTERM or SIGINT: ``sigwait``, no handler.

A Python signal handler that sets a ``threading.Event`` can hang the process for good.
CPython runs handlers on the main thread between bytecodes, so a second signal can run
its handler inside the first one's ``Event.set``, just after that took the Event's
(non-reentrant) lock; the second ``Event.set`` then waits for that lock forever. A
process-group kill of ``make run`` sends exactly that pair (the kill, then make
forwarding it); tests/unit/core/test_stopping.py tells the story.

So: :func:`hold_stop_signals` blocks both signals in the calling thread, in
``main`` before any thread starts (threads inherit the mask), and
:func:`wait_for_stop` takes the pending one with ``sigwait``. Child processes inherit
the mask too: a process that starts children must not use this.
"""

from __future__ import annotations

import signal

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


def hold_stop_signals() -> None:
    """Keep SIGTERM and SIGINT pending for :func:`wait_for_stop` (call before any thread)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def wait_for_stop() -> signal.Signals:
    """Block until SIGTERM or SIGINT arrives; the signal that did."""
    return signal.Signals(signal.sigwait(STOP_SIGNALS))
