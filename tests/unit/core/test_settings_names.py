"""The settings file's names are a contract with the chart and every user's file.

The model's fields are snake_case in code and camelCase by alias in the file, the
chart and the environment. These tests pin the names a file may use to exactly the
set it could use before the fields were renamed, and the environment variable names
to their old spelling, so that the rename changes nothing a user writes.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from atomic_gang import load_settings
from atomic_gang.settings import GangSettings, SettingsError

# Every key a settings file could hold (dotted: nested), copied from the model as it
# stood before its fields were renamed to snake_case. Never derive this list from the
# model: it is what the model must still accept.
FILE_KEYS = frozenset(
    """
    clusterName
    controllerName
    integrationMode
    defaults
    defaults.region
    defaults.nodeRoleArn
    defaults.mode
    defaults.keepWarmTTL
    defaults.maxLifetime
    limits
    limits.maxGangSize
    limits.maxKeepWarmTTL
    limits.maxLifetime
    allowedInstanceTypes
    allowedNodeRoleArns
    allowedAmiIds
    allowedSubnets
    allowedCapacityReservationIds
    allowedPlacementGroups
    namespaceAllowlists
    namespaceAllowlists.namespaces
    namespaceAllowlists.allowedAmiIds
    namespaceAllowlists.allowedSubnets
    namespaceAllowlists.allowedCapacityReservationIds
    namespaceAllowlists.allowedNodeRoleArns
    namespaceAllowlists.allowedPlacementGroups
    poolNamespaces
    poolNamespaces.names
    poolNamespaces.namespaces
    manageJobsWithoutQueueName
    requireOnePodPerNode
    kueueUsername
    jobSetUsername
    trainerUsername
    reapIntervalSeconds
    joinDeadlineSeconds
    acquireAttemptsBeforeRetry
    maxConcurrentPoolReconciles
    healthGraceSeconds
    ownerWaitSeconds
    acquireRetry
    acquireRetry.backoffBaseSeconds
    acquireRetry.backoffMaxSeconds
    leaderElection
    leaderElection.enabled
    leaderElection.leaseName
    leaderElection.namespace
    leaderElection.leaseDurationSeconds
    leaderElection.renewDeadlineSeconds
    leaderElection.retryPeriodSeconds
    iam
    iam.selfManageInstanceProfile
    ec2Api
    ec2Api.runInstancesBurst
    ec2Api.runInstancesPerSecond
    ec2Api.runInstancesInstanceBurst
    ec2Api.runInstancesInstancesPerSecond
    ec2Api.mutatingBurst
    ec2Api.mutatingPerSecond
    ec2Api.nonMutatingBurst
    ec2Api.nonMutatingPerSecond
    ec2Api.batchIdleSeconds
    ec2Api.batchMaxSeconds
    ec2Api.shortCellSeconds
    ec2Api.shortCellOwedAfterSeconds
    ec2Api.describeReuseSeconds
    capacityBlock
    capacityBlock.drainLeadSeconds
    capacityBlock.minRemainingSeconds
    capacityBlock.warningLeadSeconds
    """.split()
)


def _file_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    """The keys the model reads from a file: each field's alias, sections walked."""
    out: set[str] = set()
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        out.add(key)
        for sub in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                out |= _file_keys(sub, key + ".")
    return out


def test_the_file_accepts_exactly_the_keys_it_always_did() -> None:
    assert _file_keys(GangSettings) == FILE_KEYS
