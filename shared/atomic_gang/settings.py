"""The one settings model shared by the webhook, the provisioner and the CLI.

The YAML file uses the Helm chart's value names and nesting, so the chart can
mount its values as a ConfigMap. Environment variables (``ATOMIC_GANG_`` prefix,
``__`` between nesting levels) override the file. Invalid settings raise
:class:`SettingsError` with one line per problem.

Fields are snake_case in code (``settings.cluster_name``) and camelCase in the file,
the chart and the environment (``clusterName``, ``ATOMIC_GANG_CLUSTERNAME``): each
field's alias, made by pydantic's ``to_camel`` or given where that would not give the
chart's name (``keepWarmTTL``). Errors name the file's (camelCase) names.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings import SettingsError as EnvParseError

from atomic_gang import patterns
from atomic_gang.pool_access import PoolNamespaces
from atomic_gang.settings_sections import (
    AcquireRetry,
    CapacityBlock,
    Defaults,
    Ec2Api,
    Iam,
    LeaderElection,
    Limits,
    NamespaceAllowlist,
    NodeHealth,
    Repair,
)

__all__ = [
    "DEFAULT_CONTROLLER_NAME",
    "DEFAULT_JOBSET_USERNAME",
    "DEFAULT_KUEUE_USERNAME",
    "DEFAULT_TRAINER_USERNAME",
    "AcquireRetry",
    "CapacityBlock",
    "Defaults",
    "Ec2Api",
    "GangSettings",
    "Iam",
    "LeaderElection",
    "Limits",
    "SettingsError",
    "check_env_names",
    "load_settings",
]

DEFAULT_CONTROLLER_NAME = "atomic-gang.k8s.aws/ec2-atomic"
DEFAULT_KUEUE_USERNAME = "system:serviceaccount:kueue-system:kueue-controller-manager"
DEFAULT_JOBSET_USERNAME = "system:serviceaccount:jobset-system:jobset-controller-manager"
# Kubeflow Trainer's manifests (manifests/overlays/manager) install its controller's
# ServiceAccount as kubeflow-system/kubeflow-trainer-controller-manager.
DEFAULT_TRAINER_USERNAME = (
    "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
)


class SettingsError(ValueError):
    """Settings that cannot be used; the message names every bad field."""


class GangSettings(BaseSettings):
    """Defaults, limits, allowlists and every controller knob of the chart."""

    model_config = SettingsConfigDict(
        env_prefix="ATOMIC_GANG_",
        env_nested_delimiter="__",
        # The prefix goes before the alias: ATOMIC_GANG_CLUSTERNAME (case-insensitive).
        env_prefix_target="alias",
        extra="forbid",
        frozen=True,
        # Read by the file's names only (see settings_sections._Section).
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        loc_by_alias=True,
    )

    cluster_name: str = Field(default="", description="EKS cluster the gang nodes join.")
    controller_name: str = Field(default=DEFAULT_CONTROLLER_NAME, min_length=1, max_length=253)
    integration_mode: Literal["admissioncheck"] = "admissioncheck"
    defaults: Defaults = Field(default_factory=Defaults)
    limits: Limits = Field(default_factory=Limits)
    allowed_instance_types: tuple[str, ...] = ()
    allowed_node_role_arns: tuple[str, ...] = ()
    allowed_ami_ids: tuple[str, ...] = Field(default=(), description="ami-id allowlist; [] = any.")
    allowed_subnets: tuple[str, ...] = Field(default=(), description="subnets allowlist; [] = any.")
    allowed_capacity_reservation_ids: tuple[str, ...] = Field(
        default=(), description="capacity-reservation-id allowlist; [] = any."
    )
    allowed_placement_groups: tuple[str, ...] = Field(
        default=(),
        description="placement-group-name allowlist (names or trailing-* globs); [] = any.",
    )
    namespace_allowlists: tuple[NamespaceAllowlist, ...] = Field(
        default=(),
        max_length=1024,
        description="Allowlists scoped to namespaces; they replace the global ones there.",
    )
    pool_namespaces: tuple[PoolNamespaces, ...] = Field(
        default=(),
        max_length=1024,
        description=(
            "Pool names reserved for (and shared by) listed namespaces; any other pool "
            "belongs to the namespace that created it."
        ),
    )
    manage_jobs_without_queue_name: bool = Field(
        default=False, description="Kueue's setting: gang Jobs need no queue-name label."
    )
    require_one_pod_per_node: bool = Field(
        default=False, description="Deny (not just warn) gangs whose pods may share a node."
    )
    kueue_username: str = Field(
        default=DEFAULT_KUEUE_USERNAME,
        min_length=1,
        description="Kueue's identity: the only user that may add gang node selectors to a Job.",
    )
    job_set_username: str = Field(
        default=DEFAULT_JOBSET_USERNAME,
        min_length=1,
        description=(
            "The JobSet controller's identity: the only user that may create or update a "
            "JobSet's Jobs with gang node claims, and only pinned to one pool and group."
        ),
    )
    trainer_username: str = Field(
        default=DEFAULT_TRAINER_USERNAME,
        min_length=1,
        description=(
            "The Kubeflow Trainer controller's identity: the only user that may create or "
            "update a TrainJob's JobSet with gang node claims, and only pinned to one pool "
            "and group."
        ),
    )
    reap_interval_seconds: int = Field(default=120, ge=1)
    join_deadline_seconds: int = Field(default=600, ge=1)
    acquire_attempts_before_retry: int = Field(default=20, ge=1)
    max_concurrent_pool_reconciles: int = Field(default=5, ge=1, le=256)
    health_grace_seconds: int = Field(
        default=60, ge=0, description="NotReady grace after Satisfied."
    )
    owner_wait_seconds: int = Field(
        default=60,
        ge=1,
        le=86_400,
        description=(
            "How long a Workload on our check waits for an owner Job that cannot be read "
            "before it is Rejected (its quota freed)."
        ),
    )
    acquire_retry: AcquireRetry = Field(default_factory=AcquireRetry)
    leader_election: LeaderElection = Field(default_factory=LeaderElection)
    iam: Iam = Field(default_factory=Iam)
    ec2_api: Ec2Api = Field(default_factory=Ec2Api)
    capacity_block: CapacityBlock = Field(default_factory=CapacityBlock)
    node_health: NodeHealth = Field(default_factory=NodeHealth)
    repair: Repair = Field(default_factory=Repair)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment overrides the file (passed in as init kwargs).
        return (env_settings, init_settings)

    @model_validator(mode="after")
    def _cross_field(self) -> GangSettings:
        problems = list(_cross_field_problems(self))
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def for_namespace(self, namespace: str) -> GangSettings:
        """These settings as a Job in ``namespace`` meets them: the allowlists of every
        ``namespaceAllowlists`` entry that names it replace the global ones."""
        found: dict[str, set[str]] = {}
        for entry in self.namespace_allowlists:
            if not patterns.allowed(namespace, entry.namespaces):
                continue
            for name in SCOPED_ALLOWLISTS:
                values = getattr(entry, name)
                if values is not None:
                    found.setdefault(name, set()).update(values)
        if not found:
            return self
        return self.model_copy(update={k: tuple(sorted(v)) for k, v in found.items()})

    @property
    def allowed_roles(self) -> tuple[str, ...]:
        """``allowedNodeRoleArns``, or just the default role when that list is empty."""
        if self.allowed_node_role_arns:
            return self.allowed_node_role_arns
        return (self.defaults.node_role_arn,) if self.defaults.node_role_arn else ()

    def require(self, *fields: str) -> None:
        """Fail when a field a service cannot run without is empty (``fields``: the
        file's dotted names, as the message shows them: ``defaults.region``)."""
        missing = [f for f in fields if not _lookup(self, f)]
        if missing:
            raise SettingsError("settings: required but empty: " + ", ".join(missing))


def _lookup(obj: Any, dotted: str) -> Any:
    """The value at a dotted path of file names (aliases) or field names."""
    for part in dotted.split("."):
        by_alias = {f.alias: name for name, f in type(obj).model_fields.items() if f.alias}
        obj = getattr(obj, by_alias.get(part, part))
    return obj


# The allowlists a namespaceAllowlists entry may scope.
SCOPED_ALLOWLISTS = (
    "allowed_ami_ids",
    "allowed_subnets",
    "allowed_capacity_reservation_ids",
    "allowed_node_role_arns",
    "allowed_placement_groups",
)
# The id allowlists: (field, file name, id kind).
_ID_ALLOWLISTS = (
    ("allowed_ami_ids", "allowedAmiIds", "ami"),
    ("allowed_subnets", "allowedSubnets", "subnet"),
    ("allowed_capacity_reservation_ids", "allowedCapacityReservationIds", "cr"),
)


def _allowlist_problems(s: GangSettings) -> list[str]:
    out: list[str] = []
    for i, pat in enumerate(s.allowed_instance_types):
        if not patterns.INSTANCE_TYPE_GLOB.match(pat) or "*" in pat[:-1]:
            out.append(f"allowedInstanceTypes[{i}] {pat!r}: exact type or trailing-* glob")
    out += _id_problems(s, "")
    for n, entry in enumerate(s.namespace_allowlists):
        where = f"namespaceAllowlists[{n}]."
        out += _id_problems(entry, where)
        for i, ns in enumerate(entry.namespaces):
            if not patterns.NAMESPACE_GLOB.match(ns):
                out.append(f"{where}namespaces[{i}] {ns!r}: a namespace name or trailing-* glob")
        for i, arn in enumerate(entry.allowed_node_role_arns or ()):
            if not patterns.ROLE_ARN.match(arn):
                out.append(f"{where}allowedNodeRoleArns[{i}] {arn!r} is not an IAM role ARN")
    return out


def _id_problems(lists: Any, where: str) -> list[str]:
    out: list[str] = []
    for name, file_name, kind in _ID_ALLOWLISTS:
        for i, pat in enumerate(getattr(lists, name) or ()):
            if not patterns.id_glob_ok(kind, pat):
                out.append(f"{where}{file_name}[{i}] {pat!r}: exact {kind}-… id or trailing-* glob")
    for i, pat in enumerate(lists.allowed_placement_groups or ()):
        if not patterns.PLACEMENT_GROUP_GLOB.match(pat):
            out.append(
                f"{where}allowedPlacementGroups[{i}] {pat!r}: a group name or trailing-* glob"
            )
    return out


def _cross_field_problems(s: GangSettings) -> list[str]:
    out: list[str] = []
    if s.cluster_name and not patterns.EKS_CLUSTER_NAME.match(s.cluster_name):
        out.append(
            f"clusterName {s.cluster_name[:128]!r} is not a valid EKS cluster name "
            f"({patterns.EKS_CLUSTER_RULE})"
        )
    if s.defaults.region and not patterns.REGION.match(s.defaults.region):
        out.append(f"defaults.region {s.defaults.region!r} is not an AWS region")
    for where, arn in [("defaults.nodeRoleArn", s.defaults.node_role_arn)] + [
        (f"allowedNodeRoleArns[{i}]", a) for i, a in enumerate(s.allowed_node_role_arns)
    ]:
        if arn and not patterns.ROLE_ARN.match(arn):
            out.append(f"{where} {arn!r} is not an IAM role ARN")
    role = s.defaults.node_role_arn
    if role and s.allowed_node_role_arns and role not in s.allowed_node_role_arns:
        # Jobs relying on the default would pass the webhook and fail at launch.
        out.append(
            f"defaults.nodeRoleArn {role!r} is not in allowedNodeRoleArns"
            f" ({', '.join(s.allowed_node_role_arns)}): add it to allowedNodeRoleArns,"
            " or set defaults.nodeRoleArn to one of those roles"
        )
    out += _allowlist_problems(s)
    if not 0 <= s.defaults.keep_warm_ttl.nanoseconds <= s.limits.max_keep_warm_ttl.nanoseconds:
        out.append("defaults.keepWarmTTL must be between 0 and limits.maxKeepWarmTTL")
    if not 0 < s.defaults.max_lifetime.nanoseconds <= s.limits.max_lifetime.nanoseconds:
        out.append("defaults.maxLifetime must be > 0 and <= limits.maxLifetime")
    if s.acquire_retry.backoff_base_seconds > s.acquire_retry.backoff_max_seconds:
        out.append("acquireRetry.backoffBaseSeconds must be <= backoffMaxSeconds")
    return out


def _format_validation_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid settings ({source}):"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown setting (check the spelling against the chart's values)"
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


def load_settings(path: str | Path | None = None, **overrides: Any) -> GangSettings:
    """Read the YAML file (if any), apply env overrides, validate; raise SettingsError."""
    data: dict[str, Any] = {}
    source = "environment"
    if path:
        source = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read settings file {path}: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise SettingsError(f"settings file {path} must hold a YAML mapping")
        data = loaded or {}
    data.update(overrides)
    try:
        return GangSettings(**data)
    except ValidationError as exc:
        raise SettingsError(_format_validation_error(exc, source)) from exc
    except EnvParseError as exc:
        raise SettingsError(_env_parse_error(str(exc))) from exc


_ENV_FIELD = re.compile(r'field "([a-z0-9_]+)"')
MAX_SHOWN = 200  # characters of a bad variable's value an error message repeats


def _env_parse_error(message: str) -> str:
    """The variable, its value and the rule, for a list or section setting whose
    environment value pydantic-settings could not read as JSON."""
    found = _ENV_FIELD.search(message)
    field = GangSettings.model_fields.get(found.group(1)) if found else None
    if found is None or field is None:
        return f"environment: {message}"
    alias = field.alias or found.group(1)
    name = f"ATOMIC_GANG_{alias.upper()}"
    value = next((v for k, v in os.environ.items() if k.upper() == name), "")
    shown = value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN] + "..."
    return (
        f"environment: {name}={shown!r}: {alias} is a list or a section, so its variable "
        'holds JSON (e.g. ["p5.*", "p4d.24xlarge"] or {"maxGangSize": 8})'
    )


def check_env_names(
    prefix: str, fields: Iterable[str], environ: Mapping[str, str] | None = None
) -> None:
    """Reject ``<prefix>X`` variables that name no field: pydantic-settings ignores them
    even with ``extra="forbid"``, and a typo must never be ignored silently."""
    known = {f.upper() for f in fields}
    env = os.environ if environ is None else environ
    bad = sorted(n for n in env if n.startswith(prefix) and n[len(prefix) :] not in known)
    if not bad:
        return
    lines = []
    for name in bad:
        near = difflib.get_close_matches(name[len(prefix) :], sorted(known), n=1)
        hint = f" (did you mean {prefix}{near[0]}?)" if near else ""
        lines.append(f"  {name}: unknown setting{hint}")
    valid = ", ".join(prefix + f for f in sorted(known))
    raise SettingsError("unknown environment variables:\n" + "\n".join(lines) + f"\nknown: {valid}")
