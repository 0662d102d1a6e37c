"""Will the cluster let the node role join? Checked before anything is launched.

An instance whose role EKS does not map to ``system:nodes`` boots, bills and
never registers. The cluster's authentication mode (``accessConfig`` of
eks:DescribeCluster) says where to look: an ``EC2_LINUX`` access entry
(eks:DescribeAccessEntry) for ``API`` and ``API_AND_CONFIG_MAP``, a ``mapRoles``
entry of the ``kube-system/aws-auth`` ConfigMap with the node groups for
``CONFIG_MAP`` (and for ``API_AND_CONFIG_MAP`` without an entry). A yes is
cached by the resolver; a no raises and is asked again on the next attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from atomic_gang_provisioner.cloud.aws.calls import Caller
from atomic_gang_provisioner.cloud.error_codes import CloudError

NODE_GROUPS = ("system:bootstrappers", "system:nodes")
API_MODES = frozenset({"API", "API_AND_CONFIG_MAP"})
CONFIG_MAP_MODES = frozenset({"CONFIG_MAP", "API_AND_CONFIG_MAP"})
# Returns kube-system/aws-auth's data.mapRoles, or None when there is no such ConfigMap.
AwsAuthReader = Callable[[], str | None]


def without_path(role_arn: str) -> str:
    """``arn:aws:iam::1:role/a/b/name`` → ``arn:aws:iam::1:role/name``: aws-auth is matched
    against the role ARN without its path, so a mapping that keeps the path never matches."""
    head, _, rest = role_arn.partition(":role/")
    return f"{head}:role/{rest.rsplit('/', 1)[-1]}" if rest else role_arn


def mapped_groups(map_roles: str, role_arn: str) -> frozenset[str] | None:
    """The groups aws-auth's mapRoles gives the role, or None if it is not mapped."""
    try:
        rows = yaml.safe_load(map_roles) or []
    except yaml.YAMLError:
        return None
    if not isinstance(rows, list):
        return None
    groups: set[str] = set()
    found = False
    want = without_path(role_arn)
    for row in rows:
        if isinstance(row, dict) and str(row.get("rolearn", "")) == want:
            found = True
            groups |= {str(g) for g in row.get("groups") or [] if isinstance(g, str)}
    return frozenset(groups) if found else None


class NodeRoleAccess:
    def __init__(
        self, *, eks: Any, caller: Caller, cluster: str, aws_auth: AwsAuthReader | None
    ) -> None:
        self._eks = eks
        self._call = caller.call
        self._cluster = cluster
        self._aws_auth = aws_auth

    def verify(self, role_arn: str, mode: str) -> str:
        """Returns how the role is authorized; raises NodeRoleNotAuthorized otherwise."""
        why: list[str] = []
        if mode in API_MODES:
            found = self._access_entry(role_arn)
            if found == "EC2_LINUX":
                return "access entry EC2_LINUX"
            why.append(
                f"its access entry has type {found}, not EC2_LINUX"
                if found
                else "it has no access entry"
            )
        if mode in CONFIG_MAP_MODES:
            missing = self._aws_auth_missing(role_arn)
            if not missing:
                return "aws-auth mapRoles"
            why.append(missing)
        raise CloudError("NodeRoleNotAuthorized", self._message(role_arn, mode, why))

    def _access_entry(self, role_arn: str) -> str:
        try:
            got = self._call(
                self._eks, "describe_access_entry", clusterName=self._cluster, principalArn=role_arn
            )
        except CloudError as err:
            if err.code == "ResourceNotFoundException":
                return ""
            raise
        return str(got["accessEntry"].get("type", "STANDARD"))

    def _aws_auth_missing(self, role_arn: str) -> str:
        """Why aws-auth does not let the role join ("" when it does)."""
        if self._aws_auth is None:
            return "kube-system/aws-auth cannot be read by this controller"
        try:
            map_roles = self._aws_auth()
        except Exception as exc:  # forbidden, unreachable: no launch can be justified
            raise CloudError(
                "AwsAuthUnreadable", f"reading kube-system/aws-auth failed: {exc}", http_status=503
            ) from exc
        if map_roles is None:
            return "there is no kube-system/aws-auth ConfigMap"
        groups = mapped_groups(map_roles, role_arn)
        if groups is None:
            return (
                f"kube-system/aws-auth has no mapRoles entry with rolearn {without_path(role_arn)}"
                " (aws-auth matches role ARNs without their path)"
            )
        lacking = [g for g in NODE_GROUPS if g not in groups]
        if lacking:
            return f"its kube-system/aws-auth mapRoles entry lacks the groups {', '.join(lacking)}"
        return ""

    def _message(self, role_arn: str, mode: str, why: list[str]) -> str:
        fix = (
            f"aws eks create-access-entry --cluster-name {self._cluster} "
            f"--principal-arn {role_arn} --type EC2_LINUX"
        )
        if mode == "CONFIG_MAP":
            fix = (
                "add it to kube-system/aws-auth mapRoles with username "
                "system:node:{{EC2PrivateDNSName}} and groups system:bootstrappers, system:nodes "
                f"(or switch the cluster to access entries and run: {fix})"
            )
        return (
            f"node role {role_arn} may not join cluster {self._cluster} "
            f"(authentication mode {mode}): {'; '.join(why)}; nothing was launched. Fix: {fix}"
        )
