"""EC2 behaviour moto gets wrong or lacks, beyond launching.

* Terminate: ENIs with DeleteOnTermination are deleted, the others detach
  (after ``eni_detach_polls`` DescribeNetworkInterfaces calls, if set).
* DeleteNetworkInterface refuses an attached ENI (``InvalidNetworkInterface.InUse``).
* ModifyNetworkInterfaceAttribute honours ``Attachment.DeleteOnTermination``.
* DeleteFleets(TerminateInstances) terminates every live instance of the
  fleet and tolerates a fleet whose instances are already gone.
* DeleteLaunchTemplateVersions exists; deleted versions disappear.
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.exceptions import InvalidLaunchTemplateVersionNotFound
from moto.ec2.models import EC2Backend
from moto.ec2.models.fleets import Fleet
from moto.ec2.models.instances import Instance
from moto.ec2.models.launch_templates import LaunchTemplate
from moto.ec2.responses import EC2Response
from moto.ec2.responses.elastic_network_interfaces import ElasticNetworkInterfaces

from atomic_gang_fakeaws.errors import AwsError
from atomic_gang_fakeaws.state import FakeState, active

_TERMINATE = Instance.terminate
_DELETE_ENI = ElasticNetworkInterfaces.delete_network_interface
_MODIFY_ENI = ElasticNetworkInterfaces.modify_network_interface_attribute
_GET_VERSION = LaunchTemplate.get_version
_DESCRIBE_VERSIONS = EC2Backend.describe_launch_template_versions


def terminate(self: Any) -> Any:
    state = active()
    nics = [n for i, n in sorted(self.nics.items()) if i != 0 and not n.delete_on_termination]
    previous = _TERMINATE(self)
    if state is None:
        return previous
    for nic in nics:
        if nic.instance is not self:
            continue
        if state.eni_detach_polls > 0:
            with state.lock:
                state.pending_detach[nic.id] = (self, nic, state.eni_detach_polls)
        else:
            self.detach_eni(nic)
    return previous


def tick_detaches(state: FakeState, resp: Any) -> None:
    """Each DescribeNetworkInterfaces brings pending detaches one poll closer."""
    with state.lock:
        for eni_id, (inst, nic, left) in list(state.pending_detach.items()):
            if left <= 1:
                del state.pending_detach[eni_id]
                if nic.instance is inst:
                    inst.detach_eni(nic)
            else:
                state.pending_detach[eni_id] = (inst, nic, left - 1)


def delete_network_interface(self: Any) -> Any:
    if active() is not None:
        eni = self.ec2_backend.get_network_interface(self._get_param("NetworkInterfaceId"))
        if eni.instance is not None:
            raise AwsError("InvalidNetworkInterface.InUse", f"Interface: [{eni.id}] in use.")
    return _DELETE_ENI(self)


def modify_network_interface_attribute(self: Any) -> Any:
    attachment = self._get_param("Attachment") or {}
    if active() is not None and attachment.get("AttachmentId"):
        for eni in self.ec2_backend.enis.values():
            if eni.attachment_id == attachment["AttachmentId"]:
                eni.delete_on_termination = bool(attachment.get("DeleteOnTermination"))
    return _MODIFY_ENI(self)


def fleet_terminate_instances(self: Any) -> None:
    """Every live instance of the fleet, and no error when there is none left."""
    backend = self.ec2_backend
    ids = [iid for iid, tags in backend.tags.items() if tags.get("aws:ec2:fleet-id") == self.id]
    ids += [item["instance"].id for item in self.on_demand_instances]
    live = sorted(
        {i.id for i in backend.all_instances() if i.id in ids and i.state != "terminated"}
    )
    if live:
        backend.terminate_instances(live)


def _deleted(template: Any) -> set[int]:
    found: set[int] = getattr(template, "fake_deleted_versions", set())
    return found


def get_version(self: Any, num: Any) -> Any:
    version = _GET_VERSION(self, num)
    if version.number in _deleted(self):
        raise InvalidLaunchTemplateVersionNotFound(template_id=self.id, version=num)
    return version


def describe_launch_template_versions(self: Any, **kwargs: Any) -> Any:
    limit = kwargs.pop("max_results", 15) or 15
    found = _DESCRIBE_VERSIONS(self, max_results=10**6, **kwargs)
    return [(t, v) for t, v in found if v.number not in _deleted(t)][:limit]


def _refusal(template: Any, number: int) -> str | None:
    if number == template.default_version_number:
        return "launchTemplateVersionIsDefault"
    if number in _deleted(template) or not 1 <= number <= len(template.versions):
        return "launchTemplateVersionDoesNotExist"
    return None


def delete_launch_template_versions(self: Any) -> Any:
    backend = self.ec2_backend
    tid, name = self._get_param("LaunchTemplateId"), self._get_param("LaunchTemplateName")
    template = (
        backend.get_launch_template(tid) if tid else backend.get_launch_template_by_name(name)
    )
    deleted = _deleted(template)
    ok, bad = [], []
    for raw in self._get_param("Versions", []):
        item = {
            "LaunchTemplateId": template.id,
            "LaunchTemplateName": template.name,
            "VersionNumber": int(raw),
        }
        refusal = _refusal(template, int(raw))
        if refusal:
            bad.append({**item, "ResponseError": {"Code": refusal, "Message": refusal}})
        else:
            deleted.add(int(raw))
            ok.append(item)
    template.fake_deleted_versions = deleted
    return ActionResult(
        {
            "SuccessfullyDeletedLaunchTemplateVersions": ok,
            "UnsuccessfullyDeletedLaunchTemplateVersions": bad,
        }
    )


PATCHES: list[tuple[Any, str, Any]] = [
    (Instance, "terminate", terminate),
    (Fleet, "terminate_instances", fleet_terminate_instances),
    (ElasticNetworkInterfaces, "delete_network_interface", delete_network_interface),
    (
        ElasticNetworkInterfaces,
        "modify_network_interface_attribute",
        modify_network_interface_attribute,
    ),
    (LaunchTemplate, "get_version", get_version),
    (EC2Backend, "describe_launch_template_versions", describe_launch_template_versions),
    (EC2Response, "delete_launch_template_versions", delete_launch_template_versions),
]
BEFORE = {"DescribeNetworkInterfaces": tick_detaches}
