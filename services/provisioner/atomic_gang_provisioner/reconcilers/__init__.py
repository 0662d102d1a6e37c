"""The controller units: thin I/O around the pure decisions.

``pool`` (sole writer of GangNodePool.status and of every EC2 call), ``workload``
(sole writer of GangNodePool.spec and of our AdmissionCheckState),
``admissioncheck`` (the Active condition) and ``reaper`` (leak backstop).
"""
