"""Make moto's IAM enforcement see the conditions and resources our policy uses.

moto (5.2) evaluates identity policies with *no* condition context, authorises every
call against resource ``*`` only, and its evaluator knows little of IAM's (see
``iam_eval``). With this patch, each call is evaluated by ``iam_eval`` as AWS does:

* once per resource it acts on, with that resource's ARN and its tags as
  ``ec2:ResourceTag/<k>`` / ``aws:ResourceTag/<k>`` (instances, fleets, ENIs, launch
  templates and placement groups, by id or by name; absent → the key is absent);
* ``aws:RequestTag/<k>`` and ``aws:TagKeys`` from the request's TagSpecifications, or
  from CreateTags' own tags;
* RunInstances and CreateFleet once per resource they create or use, each with the
  condition keys of its type (``iam_launch``);
* a create call carrying tags (RunInstances, CreateFleet, CreateLaunchTemplate,
  CreatePlacementGroup) also needs ``ec2:CreateTags`` on each resource it tags, with
  ``ec2:CreateAction`` = that action, as AWS requires for tag-on-create;
* RunInstances/CreateFleet also need ``iam:PassRole`` on each role of the instance
  profile they pass (directly or via the launch template), with
  ``iam:PassedToService = ec2.amazonaws.com``; so does AddRoleToInstanceProfile for the
  role it adds (as AWS documents); the instance-profile actions are authorised against
  the profile's ARN, SSM's parameter reads against the parameter's ARN;
* a refusal reads as each service words it (``iam_denial``): EC2's
  ``UnauthorizedOperation`` names the refused resource and carries an encoded message;
* body-less REST calls (EKS) are signed over an empty body, as botocore does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from moto.ec2.models import ec2_backends
from moto.iam.access_control import IAMPolicy, IAMRequestBase
from moto.iam.models import iam_backends

from atomic_gang_fakeaws import iam_denial, placement
from atomic_gang_fakeaws.iam_eval import Decision, evaluate
from atomic_gang_fakeaws.iam_launch import launch_resources
from atomic_gang_fakeaws.state import active

_ORIGINAL = IAMRequestBase.check_action_permitted
_CREATE_REQUEST = IAMRequestBase._create_aws_request
PROFILE_ACTIONS = frozenset(
    {"iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile", "iam:GetInstanceProfile"}
)
TAG_ON_CREATE = frozenset({"ec2:CreateLaunchTemplate", "ec2:CreatePlacementGroup"})
LAUNCHES = ("ec2:RunInstances", "ec2:CreateFleet")
SSM_READS = frozenset({"ssm:GetParameter", "ssm:GetParameters"})
ID_TYPES = {
    "i-": "instance",
    "fleet-": "fleet",
    "eni-": "network-interface",
    "lt-": "launch-template",
    "pg-": "placement-group",
}
ID_PARAMS = re.compile(r"(InstanceId|FleetId|ResourceId)\.\d+|NetworkInterfaceId|LaunchTemplateId")
Target = tuple[str, dict[str, str]]  # a resource's ARN and its tags
ConditionKeys = dict[str, list[str]]  # condition key → its values in the request


@dataclass(frozen=True)
class Check:
    """One authorisation a call needs: an action on a resource, in a context."""

    action: str
    resource: str
    context: ConditionKeys


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


def context(
    *,
    asked: dict[str, str] | None = None,
    own: dict[str, str] | None = None,
    extra: ConditionKeys | None = None,
) -> ConditionKeys:
    """The condition keys of one check: the tags asked for (``aws:RequestTag``,
    ``aws:TagKeys``), the resource's own (``ec2:``/``aws:ResourceTag``) and ``extra``."""
    out: ConditionKeys = {f"aws:RequestTag/{k}": [v] for k, v in (asked or {}).items()}
    if asked:
        out["aws:TagKeys"] = list(asked)
    for k, v in (own or {}).items():
        out[f"ec2:ResourceTag/{k}"] = out[f"aws:ResourceTag/{k}"] = [v]
    return {**out, **(extra or {})}


def _arn(req: Any, kind: str, name: str) -> str:
    return f"arn:aws:ec2:{req._region}:{req.account_id}:{kind}/{name}"


def _ssm_targets(req: Any) -> list[Target]:
    """The parameters read; public ones (``/aws/service/…``) have no account in their ARN."""
    try:
        body = json.loads(req._body or b"{}")
    except ValueError:
        body = {}
    names = [body["Name"]] if "Name" in body else list(body.get("Names") or [])
    out: list[Target] = []
    for name in map(str, names):
        account = "" if name.startswith("/aws/service/") else req.account_id
        path = name if name.startswith("/") else "/" + name
        out.append((f"arn:aws:ssm:{req._region}:{account}:parameter{path}", {}))
    return out


def _targets(req: Any, params: dict[str, str], resource: str) -> list[Target]:
    """Each resource the call acts on (just ``resource`` when it names none)."""
    backend = ec2_backends[req.account_id][req._region]
    action = req._action
    if action in PROFILE_ACTIONS and params.get("InstanceProfileName"):
        arn = f"arn:aws:iam::{req.account_id}:instance-profile/{params['InstanceProfileName']}"
        return [(arn, {})]
    if action in SSM_READS:
        return _ssm_targets(req) or [(resource, {})]
    if action in ("ec2:CreatePlacementGroup", "ec2:DeletePlacementGroup"):
        names = [v for k, v in params.items() if re.fullmatch(r"GroupName(\.\d+)?", k)]
        tags = placement.resource_tags(backend, params)
        return [(_arn(req, "placement-group", n), t) for n, t in zip(names, tags, strict=True)]
    if action == "ec2:CreateLaunchTemplate":
        return [(_arn(req, "launch-template", "*"), {})]
    if action in ("ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate",
                  "ec2:CreateLaunchTemplateVersion", "ec2:DeleteLaunchTemplateVersions") and (
        "LaunchTemplateName" in params
    ):  # fmt: skip
        tid = backend.launch_template_name_to_ids.get(params["LaunchTemplateName"], "lt-unknown")
        params = {**params, "LaunchTemplateId": tid}
    ids = [v for k, v in params.items() if ID_PARAMS.fullmatch(k)]
    if not ids:
        return [(resource, {})]  # the request's own tags decide (aws:RequestTag)
    out: list[Target] = []
    for rid in ids:
        kind = next((t for prefix, t in ID_TYPES.items() if rid.startswith(prefix)), "resource")
        out.append((_arn(req, kind, rid), dict(backend.tags.get(rid, {}))))
    return out


def _launch_checks(req: Any, params: dict[str, str]) -> list[Check]:
    """RunInstances/CreateFleet: each resource, then the tags each created one gets."""
    backend = ec2_backends[req.account_id][req._region]
    found = launch_resources(
        backend, action=req._action, params=params, region=req._region, account=req.account_id
    )
    checks = [Check(req._action, r.arn, context(asked=r.request_tags, own=r.tags)) for r in found]
    on_create = {"ec2:CreateAction": [req._action.split(":", 1)[1]]}
    checks += [
        Check("ec2:CreateTags", r.arn, context(asked=r.request_tags, extra=on_create))
        for r in found
        if r.request_tags
    ]
    return checks


def _call_checks(req: Any, params: dict[str, str], resource: str) -> list[Check]:
    action = req._action
    if action in LAUNCHES:
        checks = _launch_checks(req, params)
    else:
        asked, targets = request_tags(params), _targets(req, params, resource)
        checks = [Check(action, arn, context(asked=asked, own=own)) for arn, own in targets]
        if action in TAG_ON_CREATE and asked:
            on_create = {"ec2:CreateAction": [action.split(":", 1)[1]]}
            checks += [
                Check("ec2:CreateTags", arn, context(asked=asked, extra=on_create))
                for arn, _ in targets
            ]
    if action in (*LAUNCHES, "iam:AddRoleToInstanceProfile"):
        passed = {"iam:PassedToService": ["ec2.amazonaws.com"]}
        checks += [
            Check("iam:PassRole", role, context(extra=passed)) for role in _passed(req, params)
        ]
    return checks


def _decide(req: Any, check: Check) -> Decision:
    policies = [IAMPolicy(p)._policy_json for p in req._access_key.collect_policies()]
    return evaluate(policies, check.action, check.resource, check.context.get)


def _deny(req: Any, check: Check, decision: Decision) -> None:
    principal, explicit = str(req._access_key.arn), decision is Decision.DENY
    if req._service == "ec2":
        raise iam_denial.unauthorized(
            principal, check.action, check.resource, check.context, explicit=explicit
        )
    if req._service == "ssm":
        raise iam_denial.access_denied_exception(
            principal, check.action, check.resource, explicit=explicit
        )
    req._action = check.action
    req._raise_access_denied()


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
    for check in _call_checks(self, _params(self._data), resource):
        decision = _decide(self, check)
        if decision is not Decision.ALLOW:
            _deny(self, check, decision)
    return None


PATCHES: list[tuple[Any, str, Any]] = [
    (IAMRequestBase, "check_action_permitted", check_action_permitted),
    (IAMRequestBase, "_create_aws_request", create_aws_request),
]
