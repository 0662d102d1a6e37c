"""Make moto's IAM enforcement see the conditions and resources our policy uses.

moto (5.2) evaluates identity policies with *no* condition context, so every
``Condition`` passes, and it authorises every EC2 call against resource
``*``, so a statement scoped to an ARN never matches. With this patch:

* ``aws:RequestTag/<k>`` comes from the request's TagSpecifications and
  ``ec2:ResourceTag/<k>`` from the tags of the instances, fleets, ENIs or
  placement group acted on (absent → the condition fails, as in AWS);
* DeleteNetworkInterface is authorised against the ENI's ARN, Create- and
  DeletePlacementGroup against the group's;
* RunInstances/CreateFleet also need ``iam:PassRole`` on each role of the
  instance profile they pass (directly or via the launch template), with
  ``iam:PassedToService = ec2.amazonaws.com``; so does AddRoleToInstanceProfile
  for the role it adds (as AWS documents);
* the instance-profile actions are authorised against the profile's ARN.
* body-less REST calls (EKS) are signed over an empty body, as botocore does.
Other condition keys still pass unchecked (moto's behaviour), and moto only
knows the ``StringEquals`` operator; any other operator is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from moto.ec2.models import ec2_backends
from moto.iam.access_control import IAMPolicy, IAMRequestBase, PermissionResult
from moto.iam.models import iam_backends

from atomic_gang_fakeaws import placement
from atomic_gang_fakeaws.state import active

ABSENT = "\x00absent"
_ORIGINAL = IAMRequestBase.check_action_permitted
_CREATE_REQUEST = IAMRequestBase._create_aws_request
ARN_RESOURCES = {
    "ec2:DeleteNetworkInterface": ("NetworkInterfaceId", "network-interface"),
    "ec2:CreatePlacementGroup": ("GroupName", "placement-group"),
    "ec2:DeletePlacementGroup": ("GroupName", "placement-group"),
}
PROFILE_ACTIONS = frozenset(
    {"iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile", "iam:GetInstanceProfile"}
)


class ConditionContext(dict[str, str]):
    """Values computed on demand for the keys we understand."""

    def __init__(self, compute: Callable[[str], str | None]) -> None:
        super().__init__()
        self._compute = compute

    def __bool__(self) -> bool:
        return True

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._compute(key) is not None

    def __getitem__(self, key: str) -> str:
        return self._compute(key) or ABSENT


def _params(data: dict[str, Any]) -> dict[str, str]:
    return {k: str(v[0] if isinstance(v, list) else v) for k, v in data.items()}


def request_tags(params: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        m = re.fullmatch(r"(TagSpecification\.\d+\.Tag\.\d+)\.Key", key)
        if m:
            out[value] = params.get(m.group(1) + ".Value", "")
    return out


def _resource_tags(req: Any, params: dict[str, str]) -> list[dict[str, str]]:
    backend = ec2_backends[req.account_id][req._region]
    if req._action == "ec2:DeletePlacementGroup":
        return placement.resource_tags(backend, params)
    ids = [v for k, v in params.items() if re.fullmatch(r"(InstanceId|FleetId|ResourceId)\.\d+", k)]
    if "NetworkInterfaceId" in params:
        ids.append(params["NetworkInterfaceId"])
    return [backend.tags.get(i, {}) for i in ids]


def _compute(req: Any, params: dict[str, str]) -> Callable[[str], str | None]:
    def compute(key: str) -> str | None:
        if key.startswith("aws:RequestTag/"):
            return request_tags(params).get(key.split("/", 1)[1], ABSENT)
        if key.startswith("ec2:ResourceTag/"):
            tag = key.split("/", 1)[1]
            values = {t.get(tag, ABSENT) for t in _resource_tags(req, params)}
            return values.pop() if len(values) == 1 else ABSENT
        return None

    return compute


def _permitted(req: Any, action: str, resource: str, context: dict[str, str]) -> bool:
    permitted = False
    for policy in req._access_key.collect_policies():
        result = IAMPolicy(policy).is_action_permitted(action, resource, None, context)
        if result == PermissionResult.DENIED:
            return False
        permitted = permitted or result == PermissionResult.PERMITTED
    return permitted


def _resource(req: Any, params: dict[str, str], resource: str) -> str:
    found = ARN_RESOURCES.get(req._action)
    if found and params.get(found[0]):
        return f"arn:aws:ec2:{req._region}:{req.account_id}:{found[1]}/{params[found[0]]}"
    if req._action in PROFILE_ACTIONS and params.get("InstanceProfileName"):
        return f"arn:aws:iam::{req.account_id}:instance-profile/{params['InstanceProfileName']}"
    return resource


def passed_roles(req: Any, params: dict[str, str]) -> list[str]:
    """Role ARNs of the instance profile a launch passes, via request or template."""
    ec2 = ec2_backends[req.account_id][req._region]
    profiles = [
        params[k] for k in ("IamInstanceProfile.Name", "IamInstanceProfile.Arn") if k in params
    ]
    for key, tid in params.items():
        if key.endswith("LaunchTemplateId"):
            version = params.get(key[: -len("LaunchTemplateId")] + "Version", "$Default")
            data = ec2.get_launch_template(tid).get_version(version).data
            prof = data.get("IamInstanceProfile") or {}
            profiles.extend(v for v in (prof.get("Name"), prof.get("Arn")) if v)
    iam = iam_backends[req.account_id]["aws"]
    roles: list[str] = []
    for ref in profiles:
        for prof in iam.instance_profiles.values():
            if ref in (prof.name, prof.arn):
                roles.extend(role.arn for role in prof.roles)
    return roles


def _passed(req: Any, params: dict[str, str]) -> list[str]:
    if req._action == "iam:AddRoleToInstanceProfile":
        return [f"arn:aws:iam::{req.account_id}:role/{params.get('RoleName', '')}"]
    return passed_roles(req, params)


def create_aws_request(self: Any) -> Any:
    """moto signs a body-less REST request (EKS GETs) over its parsed parameters,
    so every EKS call fails SignatureDoesNotMatch once IAM is enforced."""
    request = _CREATE_REQUEST(self)
    if active() is not None and not self._body and self._method in ("GET", "DELETE", "HEAD"):
        request.data = b""
    return request


def check_action_permitted(self: Any, resource: str) -> None:
    if active() is None or self._action == "sts:GetCallerIdentity":
        return _ORIGINAL(self, resource)
    params = _params(self._data)
    context = ConditionContext(_compute(self, params))
    if not _permitted(self, self._action, _resource(self, params, resource), context):
        self._raise_access_denied()
    if self._action in ("ec2:RunInstances", "ec2:CreateFleet", "iam:AddRoleToInstanceProfile"):
        passed = {"iam:PassedToService": "ec2.amazonaws.com"}
        for role in _passed(self, params):
            if not _permitted(self, "iam:PassRole", role, passed):
                self._action = "iam:PassRole"
                self._raise_access_denied()
    return None


PATCHES: list[tuple[Any, str, Any]] = [
    (IAMRequestBase, "check_action_permitted", check_action_permitted),
    (IAMRequestBase, "_create_aws_request", create_aws_request),
]
