"""The provisioner: Kueue AdmissionCheck controller for atomic N-or-0 EC2 gangs.

Layers, top to bottom (enforced by import-linter): ``main`` and the reconcilers
(``workload``, ``admissioncheck``, ``pool.reconciler``, ``reaper``) → the pure pool
state machine (``pool``) → the adapters (``cloud`` for EC2, ``kube`` for the
API server) and the ``runtime`` (queues, workers) → the shared core ``atomic_gang``.
"""
