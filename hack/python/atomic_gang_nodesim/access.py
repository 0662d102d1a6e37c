"""Does the cluster let this instance's role register a node? As EKS decides at join.

kubelet authenticates with the instance role; EKS maps it to ``system:nodes``
through an ``EC2_LINUX`` access entry (``API``, ``API_AND_CONFIG_MAP``) or an
``aws-auth`` mapRoles row with the node groups (``CONFIG_MAP``,
``API_AND_CONFIG_MAP``), matched on the role ARN without its path. Written
apart from the controller's own check on purpose: the simulator is the judge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from botocore.exceptions import ClientError

ROLE_TTL = 1.0  # seconds an answer is reused: one check per role per tick, not per node
NODE_GROUPS = {"system:bootstrappers", "system:nodes"}


class JoinAuthority:
    def __init__(
        self,
        *,
        eks: Any,
        iam: Any,
        cluster: str,
        aws_auth: Callable[[], str | None],
        clock: Callable[[], float],
    ) -> None:
        self._eks, self._iam, self._cluster = eks, iam, cluster
        self._aws_auth, self._clock = aws_auth, clock
        self._roles: dict[str, str] = {}  # instance profile ARN -> role ARN
        self._answers: dict[str, tuple[float, str]] = {}

    def refusal(self, profile_arn: str) -> str:
        """Why a node with this instance profile may not register ("" if it may)."""
        if not profile_arn:
            return "the instance has no instance profile: kubelet has no credentials"
        role = self._role(profile_arn)
        if not role:
            return f"instance profile {profile_arn} holds no role"
        hit = self._answers.get(role)
        if hit is not None and self._clock() - hit[0] < ROLE_TTL:
            return hit[1]
        answer = self._judge(role)
        self._answers[role] = (self._clock(), answer)
        return answer

    def _role(self, profile_arn: str) -> str:
        if profile_arn not in self._roles:
            name = profile_arn.rsplit("/", 1)[-1]
            prof = self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
            roles = prof.get("Roles") or []
            self._roles[profile_arn] = str(roles[0]["Arn"]) if roles else ""
        return self._roles[profile_arn]

    def _judge(self, role: str) -> str:
        info = self._eks.describe_cluster(name=self._cluster)["cluster"]
        mode = str((info.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
        if mode != "CONFIG_MAP" and self._entry_type(role) == "EC2_LINUX":
            return ""
        if mode != "API" and self._mapped(role):
            return ""
        return f"Unauthorized: role {role} is not a node of cluster {self._cluster} ({mode})"

    def _entry_type(self, role: str) -> str:
        try:
            got = self._eks.describe_access_entry(clusterName=self._cluster, principalArn=role)
        except ClientError as err:
            if err.response["Error"]["Code"] == "ResourceNotFoundException":
                return ""
            raise
        return str(got["accessEntry"].get("type", ""))

    def _mapped(self, role: str) -> bool:
        text = self._aws_auth()
        if not text:
            return False
        head, _, rest = role.partition(":role/")
        bare = f"{head}:role/{rest.rsplit('/', 1)[-1]}"
        for row in yaml.safe_load(text) or []:
            if isinstance(row, dict) and row.get("rolearn") == bare:
                return set(row.get("groups") or []) >= NODE_GROUPS
        return False
