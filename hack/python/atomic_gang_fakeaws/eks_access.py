"""EKS access entries and the cluster's authentication mode, which moto lacks.

``CreateAccessEntry``, ``DescribeAccessEntry``, ``DeleteAccessEntry`` and
``ListAccessEntries`` with EKS's shapes and error codes; ``DescribeCluster``
reports ``accessConfig.authenticationMode`` (``CreateCluster``'s, else
``CONFIG_MAP`` as the API defaults) and ``UpdateClusterConfig`` moves it one
way only (CONFIG_MAP → API_AND_CONFIG_MAP → API), as EKS does. Entries live on
moto's Cluster object, so they go with the cluster.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import moto.eks.urls
from moto.core.responses import ActionResult, EmptyResult
from moto.eks.exceptions import (
    InvalidParameterException,
    InvalidRequestException,
    ResourceInUseException,
    ResourceNotFoundException,
)
from moto.eks.models import Cluster
from moto.eks.responses import EKSResponse

MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")
TYPES = frozenset({"STANDARD", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "EC2", "HYBRID_LINUX"})
NODE_TYPES = frozenset({"EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX", "EC2"})
PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:(iam|sts)::\d{12}:(role|user|assumed-role)/\S+$")
NOT_API = (
    "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
    "to perform this operation."
)
_URLS = {
    "{0}/clusters/(?P<name>[^/]+)/access-entries$": moto.eks.urls.response.dispatch,
    "{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<principalArn>.+)$": (
        moto.eks.urls.response.dispatch
    ),
}
_CREATE_CLUSTER = EKSResponse.create_cluster
_UPDATE_CONFIG = EKSResponse.update_cluster_config


def access_config(cluster: Cluster) -> dict[str, Any]:
    found: dict[str, Any] | None = getattr(cluster, "access_config", None)
    if found is None:
        found = {
            "authenticationMode": "CONFIG_MAP",
            "bootstrapClusterCreatorAdminPermissions": True,
        }
        cluster.access_config = found  # type: ignore[attr-defined]
    return found


def entries(cluster: Cluster) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] | None = getattr(cluster, "access_entries", None)
    if found is None:
        found = cluster.access_entries = {}  # type: ignore[attr-defined]
    return found


def set_authentication_mode(cluster: Cluster, mode: str) -> None:
    if mode not in MODES:
        raise InvalidParameterException(message=f"Unsupported authentication mode {mode}")
    access_config(cluster)["authenticationMode"] = mode


def add_entry(
    cluster: Cluster,
    principal_arn: str,
    *,
    type_: str = "STANDARD",
    groups: list[str] | None = None,
    username: str | None = None,
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Create an entry on ``cluster`` with CreateAccessEntry's checks (in-process seeds too)."""
    if access_config(cluster)["authenticationMode"] == "CONFIG_MAP":
        raise InvalidRequestException(clusterName=cluster.name, message=NOT_API)
    if not PRINCIPAL.match(principal_arn or ""):
        raise InvalidParameterException(
            clusterName=cluster.name, message="The specified principalArn is invalid: invalid ARN"
        )
    if type_ not in TYPES:
        raise InvalidParameterException(
            clusterName=cluster.name, message=f"The specified type {type_} is not supported"
        )
    if type_ in NODE_TYPES and (groups or username):
        raise InvalidParameterException(
            clusterName=cluster.name,
            message=f"kubernetesGroups and username cannot be specified for type {type_}",
        )
    table = entries(cluster)
    if principal_arn in table:
        raise ResourceInUseException(
            clusterName=cluster.name,
            message="The specified access entry resource is already in use on this cluster.",
        )
    now = datetime.now(UTC)
    account, name = principal_arn.split(":")[4], principal_arn.rsplit("/", 1)[-1]
    region = cluster.arn.split(":")[3]
    entry = {
        "clusterName": cluster.name,
        "principalArn": principal_arn,
        "kubernetesGroups": list(groups or []),
        "accessEntryArn": (
            f"arn:aws:eks:{region}:{account}:access-entry/{cluster.name}/role/{account}/{name}/"
            f"{uuid.uuid4()}"
        ),
        "createdAt": now,
        "modifiedAt": now,
        "tags": dict(tags or {}),
        "username": username
        or ("system:node:{{EC2PrivateDNSName}}" if type_ in NODE_TYPES else principal_arn),
        "type": type_,
    }
    table[principal_arn] = entry
    return entry


def _cluster(resp: EKSResponse, name: str) -> Cluster:
    found = resp.eks_backend.clusters.get(name)
    if found is None:
        raise ResourceNotFoundException(
            clusterName=name, message=f"No cluster found for name: {name}."
        )
    return found


def _entry(cluster: Cluster, principal_arn: str) -> dict[str, Any]:
    if access_config(cluster)["authenticationMode"] == "CONFIG_MAP":
        raise InvalidRequestException(clusterName=cluster.name, message=NOT_API)
    found = entries(cluster).get(principal_arn)
    if found is None:
        raise ResourceNotFoundException(
            clusterName=cluster.name,
            message="The specified access entry resource is not found.",
        )
    return found


def create_access_entry(self: EKSResponse) -> ActionResult:
    cluster = _cluster(self, self._get_param("name"))
    entry = add_entry(
        cluster,
        self._get_param("principalArn"),
        type_=self._get_param("type") or "STANDARD",
        groups=self._get_param("kubernetesGroups"),
        username=self._get_param("username"),
        tags=self._get_param("tags"),
    )
    return ActionResult({"accessEntry": entry})


def describe_access_entry(self: EKSResponse) -> ActionResult:
    cluster = _cluster(self, self._get_param("name"))
    return ActionResult({"accessEntry": _entry(cluster, self._get_param("principalArn"))})


def delete_access_entry(self: EKSResponse) -> EmptyResult:
    cluster = _cluster(self, self._get_param("name"))
    principal = self._get_param("principalArn")
    _entry(cluster, principal)
    del entries(cluster)[principal]
    return EmptyResult()


def list_access_entries(self: EKSResponse) -> ActionResult:
    cluster = _cluster(self, self._get_param("name"))
    if access_config(cluster)["authenticationMode"] == "CONFIG_MAP":
        raise InvalidRequestException(clusterName=cluster.name, message=NOT_API)
    return ActionResult({"accessEntries": sorted(entries(cluster))})


def create_cluster(self: EKSResponse) -> ActionResult:
    result = _CREATE_CLUSTER(self)
    cluster = _cluster(self, self._get_param("name"))
    wanted = self._get_param("accessConfig") or {}
    set_authentication_mode(cluster, wanted.get("authenticationMode") or "CONFIG_MAP")
    return result


def update_cluster_config(self: EKSResponse) -> ActionResult:
    """``accessConfig.authenticationMode`` may only move towards API, as on EKS."""
    wanted = (self._get_param("accessConfig") or {}).get("authenticationMode")
    if wanted:
        cluster = _cluster(self, self._get_param("name"))
        now = access_config(cluster)["authenticationMode"]
        if wanted not in MODES or MODES.index(wanted) < MODES.index(now):
            raise InvalidParameterException(
                clusterName=cluster.name,
                message=f"Unsupported authentication mode update from {now} to {wanted}",
            )
        set_authentication_mode(cluster, wanted)
    result: ActionResult = _UPDATE_CONFIG(self)
    return result


def install_urls() -> None:
    moto.eks.urls.url_paths.update(_URLS)


PATCHES: list[tuple[Any, str, Any]] = [
    (EKSResponse, "create_access_entry", create_access_entry),
    (EKSResponse, "describe_access_entry", describe_access_entry),
    (EKSResponse, "delete_access_entry", delete_access_entry),
    (EKSResponse, "list_access_entries", list_access_entries),
    (EKSResponse, "create_cluster", create_cluster),
    (EKSResponse, "update_cluster_config", update_cluster_config),
]
