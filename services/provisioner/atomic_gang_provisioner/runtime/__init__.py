"""The provisioner's runtime: a rate-limited work queue and a worker pool over it.

Pure Python with client-go semantics (dedup, one worker per key, per-key
backoff); it knows nothing about Kubernetes. Informers enqueue keys, the
``Controller`` runs the reconcile function over them.
"""

from atomic_gang_provisioner.runtime.controller import Controller, ControllerHooks, Result
from atomic_gang_provisioner.runtime.ratelimit import ExponentialBackoff
from atomic_gang_provisioner.runtime.workqueue import Clock, WorkQueue

__all__ = [
    "Clock",
    "Controller",
    "ControllerHooks",
    "ExponentialBackoff",
    "Result",
    "WorkQueue",
]
