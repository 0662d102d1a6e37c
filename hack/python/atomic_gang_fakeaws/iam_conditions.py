"""Make moto's IAM enforcement see the conditions and resources our policy uses.

moto (5.2) evaluates identity policies with *no* condition context, authorises every
EC2 call against resource ``*`` only, and its evaluator knows little of IAM's (see
``iam_eval``). With this patch, each call is evaluated by ``iam_eval`` as AWS does:

* once per resource it acts on, with that resource's ARN and its tags as
  ``ec2:ResourceTag/<k>`` / ``aws:ResourceTag/<k>`` (instances, fleets, ENIs, launch
  templates and placement groups, by id or by name; absent → the key is absent);
* ``aws:RequestTag/<k>`` and ``aws:TagKeys`` from the request's TagSpecifications, or
  from CreateTags' own tags;
* a create call carrying TagSpecifications (RunInstances, CreateFleet,
  CreateLaunchTemplate, CreatePlacementGroup) also needs ``ec2:CreateTags`` with
  ``ec2:CreateAction`` = that action, as AWS requires for tag-on-create;
* RunInstances/CreateFleet into a placement group (in the request or its launch
  template) are also authorised against the group's ARN;
* RunInstances/CreateFleet also need ``iam:PassRole`` on each role of the instance
  profile they pass (directly or via the launch template), with
  ``iam:PassedToService = ec2.amazonaws.com``; so does AddRoleToInstanceProfile for the
  role it adds (as AWS documents); the instance-profile actions are authorised against
  the profile's ARN;
* body-less REST calls (EKS) are signed over an empty body, as botocore does.
"""

from __future__ import annotations

import re
from typing import Any

from moto.ec2.models import ec2_backends
from moto.iam.access_control import IAMPolicy, IAMRequestBase
from moto.iam.models import iam_backends

from atomic_gang_fakeaws import placement
from atomic_gang_fakeaws.iam_eval import Context, Decision, evaluate
from atomic_gang_fakeaws.state import active

_ORIGINAL = IAMRequestBase.check_action_permitted
_CREATE_REQUEST = IAMRequestBase._create_aws_request
PROFILE_ACTIONS = frozenset(
    {"iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile", "iam:GetInstanceProfile"}
)
TAG_ON_CREATE = {
    "ec2:RunInstances": "instance",
    "ec2:CreateFleet": "fleet",
    "ec2:CreateLaunchTemplate": "launch-template",
    "ec2:CreatePlacementGroup": "placement-group",
}
LAUNCHES = ("ec2:RunInstances", "ec2:CreateFleet")
ID_TYPES = {
    "i-": "instance",
    "fleet-": "fleet",
    "eni-": "network-interface",
    "lt-": "launch-template",
    "pg-": "placement-group",
}
ID_PARAMS = re.compile(r"(InstanceId|FleetId|ResourceId)\.\d+|NetworkInterfaceId|LaunchTemplateId")
Target = tuple[str, dict[str, str]]  # a resource's ARN and its tags


def _params(data: dict[str, Any]) -> dict[str, str]:
    return {k: str(v[0] if isinstance(v, list) else v) for k, v in data.items()}


def request_tags(params: dict[str, str]) -> dict[str, str]:
    """The tags a request sets: its TagSpecifications, or CreateTags' ``Tag.N``."""
    out: dict[str, str] = {}
    for key, value in params.items():
        m = re.fullmatch(r"(TagSpecification\.\d+\.Tag\.\d+|Tag\.\d+)\.Key", key)
        if m:
            out[value] = params.get(m.group(1) + ".Value", "")
    return out


def _arn(req: Any, kind: str, name: str) -> str:
    return f"arn:aws:ec2:{req._region}:{req.account_id}:{kind}/{name}"


def _targets(req: Any, params: dict[str, str], resource: str) -> list[Target]:
    """Each resource the call acts on (just ``resource`` when it names none)."""
    backend = ec2_backends[req.account_id][req._region]
    action = req._action
    if action in PROFILE_ACTIONS and params.get("InstanceProfileName"):
        arn = f"arn:aws:iam::{req.account_id}:instance-profile/{params['InstanceProfileName']}"
        return [(arn, {})]
    if action in ("ec2:CreatePlacementGroup", "ec2:DeletePlacementGroup"):
        names = [v for k, v in params.items() if re.fullmatch(r"GroupName(\.\d+)?", k)]
        tags = placement.resource_tags(backend, params)
        return [(_arn(req, "placement-group", n), t) for n, t in zip(names, tags, strict=True)]
    if action in ("ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate",
                  "ec2:CreateLaunchTemplateVersion", "ec2:DeleteLaunchTemplateVersions") and (
        "LaunchTemplateName" in params
    ):  # fmt: skip
        tid = backend.launch_template_name_to_ids.get(params["LaunchTemplateName"], "lt-unknown")
        params = {**params, "LaunchTemplateId": tid}
    ids = [v for k, v in params.items() if ID_PARAMS.fullmatch(k)]
    if action in TAG_ON_CREATE or action in LAUNCHES or not ids:
        return [(resource, {})]  # the request's own tags decide (aws:RequestTag)
    out: list[Target] = []
    for rid in ids:
        kind = next((t for prefix, t in ID_TYPES.items() if rid.startswith(prefix)), "resource")
        out.append((_arn(req, kind, rid), dict(backend.tags.get(rid, {}))))
    return out


def _context(params: dict[str, str], tags: dict[str, str], extra: dict[str, list[str]]) -> Context:
    asked = request_tags(params)

    def values(key: str) -> list[str] | None:
        if key.startswith("aws:RequestTag/"):
            found = asked.get(key.split("/", 1)[1])
            return None if found is None else [found]
        if key == "aws:TagKeys":
            return list(asked) or None
        if key.startswith(("ec2:ResourceTag/", "aws:ResourceTag/")):
            found = tags.get(key.split("/", 1)[1])
            return None if found is None else [found]
        return extra.get(key)

    return values


def _allowed(req: Any, action: str, resource: str, context: Context) -> bool:
    policies = [IAMPolicy(p)._policy_json for p in req._access_key.collect_policies()]
    return evaluate(policies, action, resource, context) is Decision.ALLOW


def _deny(req: Any, action: str) -> None:
    req._action = action
    req._raise_access_denied()


def placement_groups(req: Any, params: dict[str, str]) -> list[str]:
    """Placement groups a launch names, in the request or in its launch template."""
    ec2 = ec2_backends[req.account_id][req._region]
    names = [v for k, v in params.items() if k.endswith("Placement.GroupName") and v]
    for key, tid in params.items():
        if key.endswith("LaunchTemplateId"):
            version = params.get(key[: -len("LaunchTemplateId")] + "Version", "$Default")
            data = ec2.get_launch_template(tid).get_version(version).data
            group = (data.get("Placement") or {}).get("GroupName")
            names.extend([group] if group else [])
    return sorted(set(names))


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
    action, params = self._action, _params(self._data)
    for arn, tags in _targets(self, params, resource):
        if not _allowed(self, action, arn, _context(params, tags, {})):
            _deny(self, action)
    created = TAG_ON_CREATE.get(action)
    if created and request_tags(params):
        on_create = {"ec2:CreateAction": [action.split(":", 1)[1]]}
        if not _allowed(self, "ec2:CreateTags", "*", _context(params, {}, on_create)):
            _deny(self, "ec2:CreateTags")
    if action in LAUNCHES:
        for group in placement_groups(self, params):
            arn = _arn(self, "placement-group", group)
            if not _allowed(self, action, arn, _context(params, {}, {})):
                _deny(self, action)
    if action in (*LAUNCHES, "iam:AddRoleToInstanceProfile"):
        passed = {"iam:PassedToService": ["ec2.amazonaws.com"]}
        for role in _passed(self, params):
            if not _allowed(self, "iam:PassRole", role, _context(params, {}, passed)):
                _deny(self, "iam:PassRole")
    return None


PATCHES: list[tuple[Any, str, Any]] = [
    (IAMRequestBase, "check_action_permitted", check_action_permitted),
    (IAMRequestBase, "_create_aws_request", create_aws_request),
]
