"""The provisioner's cloud layer: N-or-0 EC2 acquisition behind narrow Protocols.

Design. One Protocol per caller (``roles.py``): the pool reconcile's
:class:`Launcher` and :class:`Observer`, the reaper's :class:`Janitor`; the
engine is all of them (:class:`Cloud`). They return frozen types from
``cloud.values``; boto3 lives only in ``cloud.aws``. The pool state machine (Idle → Acquiring →
Joining → Satisfied → KeepWarm → Releasing) calls it and persists what it
returns: instance ids, fleet id, pending ENIs and ``acquireGeneration``.

* ``acquire(AcquireRequest(spec, generation))`` is idempotent per (pool,
  generation): it first adopts a set already tagged with that generation, then
  launches with ClientTokens derived from (pool, generation, AZ). Bump the
  generation only when the result is ``terminal`` (Launched, Shortfall,
  QuotaExceeded, PermanentFailure); on ``RetryLater`` call again unchanged (with its
  ``unknown`` launch as ``replay``, recorded first);
  on ``AwaitingReservation`` call again at its ``starts_at``.
* ``find(pool=, generation=)`` is the adoption lookup alone (launches nothing).
* ``release`` is idempotent and ENI-aware; ``ReleaseResult.done`` says when
  nothing is left (pending ENIs come back to be passed in next time).
* The reaper calls ``list_owned()`` once per sweep, then the pure
  :func:`leaks.find_leaks`, then ``release``.

AWS error codes are classified in ``errors.py``; only throttled and transient
errors are retried (``retry.py``), with the clock and sleeper injected.
"""

from atomic_gang_provisioner.cloud.error_codes import CloudError, ErrorClass, classify
from atomic_gang_provisioner.cloud.leaks import PoolView, Reap, ReapReason, find_leaks
from atomic_gang_provisioner.cloud.roles import Cloud, Janitor, Launcher, Observer
from atomic_gang_provisioner.cloud.values import (
    AcquireRequest,
    AcquireResult,
    AwaitingReservation,
    Instance,
    Launched,
    PermanentFailure,
    QuotaExceeded,
    ReleaseRequest,
    ReleaseResult,
    RetryLater,
    Shortfall,
    UnknownLaunch,
    Waiting,
    ZoneAttempt,
)

__all__ = [
    "AcquireRequest",
    "AcquireResult",
    "AwaitingReservation",
    "Cloud",
    "CloudError",
    "ErrorClass",
    "Instance",
    "Janitor",
    "Launched",
    "Launcher",
    "Observer",
    "PermanentFailure",
    "PoolView",
    "QuotaExceeded",
    "Reap",
    "ReapReason",
    "ReleaseRequest",
    "ReleaseResult",
    "RetryLater",
    "Shortfall",
    "UnknownLaunch",
    "Waiting",
    "ZoneAttempt",
    "classify",
    "find_leaks",
]
