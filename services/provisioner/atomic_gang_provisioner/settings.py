"""Every setting the provisioner runs by, resolved once into one frozen tree.

:func:`load` reads the environment and the settings file and :func:`resolve` makes
the tree; nothing else builds a section. Its four sections:

``gang``
    :class:`~atomic_gang.settings.GangSettings`: the shared settings file
    (``--config``, default ``$ATOMIC_GANG_CONFIG``; the chart's ConfigMap), which the
    webhook and the CLI read too.
``server``
    :class:`~atomic_gang_provisioner.config.ServerSettings`: this process's own
    options, from ``ATOMIC_GANG_PROVISIONER_*`` variables (the chart's Deployment).
``knobs``
    :class:`~atomic_gang_provisioner.pool.model.Knobs`: what the pool state machine
    reads, taken from ``gang`` (the pure layer's view: ``pool/`` imports no settings).
``engine``
    :class:`~atomic_gang_provisioner.cloud.aws.EngineConfig`: what the EC2 engine
    reads, taken from ``gang`` and ``server``.

Precedence, one rule: the environment over the file. Within the shared settings an
``ATOMIC_GANG_<NAME>`` variable (``__`` between levels) overrides the file's value;
where a process option and a shared setting say the same thing, the process's
``ATOMIC_GANG_PROVISIONER_*`` variable wins (``POOL_WORKERS`` over
``maxConcurrentPoolReconciles``); what neither sets is the model's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from atomic_gang import startup
from atomic_gang.settings import Ec2Api, GangSettings
from atomic_gang_provisioner.cloud.aws import EngineConfig
from atomic_gang_provisioner.cloud.batcher import Windows
from atomic_gang_provisioner.cloud.turns.budget import BucketSpec, BudgetLimits
from atomic_gang_provisioner.config import ServerSettings
from atomic_gang_provisioner.pool.model import ConditionRule, Knobs

__all__ = ["PREFIX", "ProvisionerSettings", "budget_limits", "engine", "knobs", "load", "resolve"]

PREFIX = "ATOMIC_GANG_PROVISIONER_"
# What the provisioner cannot run without (the file's names, as the error shows them).
REQUIRED = ("clusterName", "defaults.region")


@dataclass(frozen=True)
class ProvisionerSettings:
    """The provisioner's settings: the two read (``gang``, ``server``) and the views
    derived from them (``knobs``, ``engine``, ``pool_workers``). Made by :func:`resolve`."""

    gang: GangSettings
    server: ServerSettings
    knobs: Knobs
    engine: EngineConfig
    # Pools reconciled at once: ATOMIC_GANG_PROVISIONER_POOL_WORKERS, else the shared
    # maxConcurrentPoolReconciles.
    pool_workers: int


def load(config: str) -> ProvisionerSettings:
    """Read ``ATOMIC_GANG_PROVISIONER_*`` and the settings file at ``config`` ('' for
    none; ``ATOMIC_GANG_*`` over it) and resolve them; raise SettingsError when either
    is invalid or a required setting is empty."""
    server = startup.server_settings(ServerSettings, prefix=PREFIX)
    return resolve(startup.gang_settings(config, *REQUIRED), server)


def resolve(gang: GangSettings, server: ServerSettings) -> ProvisionerSettings:
    """The one place the derived sections are made from the two read ones."""
    return ProvisionerSettings(
        gang=gang,
        server=server,
        knobs=knobs(gang),
        engine=engine(gang, server),
        pool_workers=server.pool_workers or gang.max_concurrent_pool_reconciles,
    )


def knobs(gang: GangSettings) -> Knobs:
    return Knobs(
        cluster=gang.cluster_name,
        join_deadline=timedelta(seconds=gang.join_deadline_seconds),
        attempts_before_retry=gang.acquire_attempts_before_retry,
        backoff_base=gang.acquire_retry.backoff_base_seconds,
        backoff_max=gang.acquire_retry.backoff_max_seconds,
        health_grace=timedelta(seconds=gang.health_grace_seconds),
        liveness_window=timedelta(seconds=gang.ec2_api.describe_reuse_seconds),
        block_drain_lead=timedelta(seconds=gang.capacity_block.drain_lead_seconds),
        block_min_remaining=timedelta(seconds=gang.capacity_block.min_remaining_seconds),
        block_warning_lead=timedelta(seconds=gang.capacity_block.warning_lead_seconds),
        health_conditions=tuple(
            ConditionRule(c.type, c.status, timedelta(seconds=c.grace_seconds))
            for c in gang.node_health.conditions
        ),
        repair_enabled=gang.repair.enabled,
        repair_deadline=timedelta(seconds=gang.repair.deadline_seconds),
        repair_max_nodes=gang.repair.max_nodes,
        max_repairs=gang.repair.max_repairs,
    )


def engine(gang: GangSettings, server: ServerSettings) -> EngineConfig:
    api = gang.ec2_api
    return EngineConfig(
        cluster=gang.cluster_name,
        eni_wait_seconds=server.eni_wait_seconds,
        self_manage_instance_profile=gang.iam.self_manage_instance_profile,
        limits=budget_limits(api),
        batch=Windows(idle_seconds=api.batch_idle_seconds, max_seconds=api.batch_max_seconds),
        capacity_ttl_seconds=api.short_cell_seconds,
        capacity_owed_after_seconds=api.short_cell_owed_after_seconds,
        describe_reuse_seconds=api.describe_reuse_seconds,
    )


def budget_limits(api: Ec2Api) -> BudgetLimits:
    return BudgetLimits(
        run_instances=BucketSpec(api.run_instances_burst, api.run_instances_per_second),
        run_instances_instances=BucketSpec(
            api.run_instances_instance_burst, api.run_instances_instances_per_second
        ),
        mutating=BucketSpec(api.mutating_burst, api.mutating_per_second),
        non_mutating=BucketSpec(api.non_mutating_burst, api.non_mutating_per_second),
    )
