"""The Workload reconciler: sole writer of GangNodePool.spec and of our
AdmissionCheckState. ``view`` reads a raw Workload, ``decide`` is pure,
``reconciler`` does the I/O."""
