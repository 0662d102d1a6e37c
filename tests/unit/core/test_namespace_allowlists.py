"""Allowlists scoped to namespaces (namespaceAllowlists) and the placement-group
allowlist: a namespace's entries replace the global lists for its Jobs, for the
webhook, the CLI and the provisioner alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from atomic_gang import GangValidationError, load_settings, validate_job
from atomic_gang import keys as k
from atomic_gang.settings import SettingsError
from tests.support.jobs import gang_job, settings

AMI_A, AMI_B = "ami-0aaaaaaaaaaaaaaa1", "ami-0bbbbbbbbbbbbbbb1"
SCOPED = settings(
    allowedAmiIds=[AMI_A, AMI_B],
    namespaceAllowlists=[
        {"namespaces": ["team-a", "team-a-*"], "allowedAmiIds": [AMI_A]},
        {"namespaces": ["team-b"], "allowedAmiIds": [AMI_B], "allowedPlacementGroups": ["b-*"]},
        {"namespaces": ["team-b"], "allowedAmiIds": ["ami-0ccccccccccccccc1"]},
    ],
)


def _reasons(job: dict[str, object], s: object) -> set[str]:
    try:
        validate_job(job, s)  # type: ignore[arg-type]
    except GangValidationError as err:
        return set(err.reasons)
    return set()


def test_without_entries_a_namespace_meets_the_global_lists() -> None:
    s = settings(allowedAmiIds=[AMI_A])
    assert s.for_namespace("anyone") is s


def test_a_namespace_entry_replaces_the_global_list_and_entries_add_up() -> None:
    assert SCOPED.for_namespace("team-a").allowed_ami_ids == (AMI_A,)
    assert SCOPED.for_namespace("team-a-batch").allowed_ami_ids == (AMI_A,)  # a glob
    b = SCOPED.for_namespace("team-b")
    assert set(b.allowed_ami_ids) == {AMI_B, "ami-0ccccccccccccccc1"}  # two entries
    assert b.allowed_placement_groups == ("b-*",)
    assert SCOPED.for_namespace("team-a").allowed_placement_groups == ()  # unset: the global
    assert SCOPED.for_namespace("team-c").allowed_ami_ids == (AMI_A, AMI_B)


def test_a_job_may_use_its_namespaces_image_only() -> None:
    job_b_image = gang_job(annotations={k.AMI_ID: AMI_B})
    assert _reasons(job_b_image, SCOPED.for_namespace("team-b")) == set()
    assert _reasons(job_b_image, SCOPED.for_namespace("team-a")) == {"AmiNotAllowed"}


def test_a_placement_group_outside_the_allowlist_is_denied_naming_the_setting() -> None:
    job = gang_job(annotations={k.PLACEMENT_GROUP_NAME: "a-secret-group"})
    with pytest.raises(GangValidationError) as info:
        validate_job(job, SCOPED.for_namespace("team-b"))
    assert info.value.reasons == ("PlacementGroupNotAllowed",)
    assert "allowedPlacementGroups" in str(info.value)
    assert "b-*" not in str(info.value)  # never the list
    ok = gang_job(annotations={k.PLACEMENT_GROUP_NAME: "b-train"})
    assert validate_job(ok, SCOPED.for_namespace("team-b")) is not None


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        pytest.param(
            "namespaceAllowlists: [{namespaces: ['Team_A'], allowedAmiIds: []}]\n",
            "namespaceAllowlists[0].namespaces[0] 'Team_A'",
            id="namespace",
        ),
        pytest.param(
            "namespaceAllowlists: [{namespaces: [a], allowedAmiIds: [ami-12]}]\n",
            "namespaceAllowlists[0].allowedAmiIds[0] 'ami-12'",
            id="ami",
        ),
        pytest.param(
            "namespaceAllowlists: [{namespaces: [a], allowedNodeRoleArns: [role]}]\n",
            "namespaceAllowlists[0].allowedNodeRoleArns[0] 'role' is not an IAM role ARN",
            id="role",
        ),
        pytest.param(
            "namespaceAllowlists: [{namespaces: [], allowedAmiIds: []}]\n",
            "namespaceAllowlists.0.namespaces",
            id="no-namespaces",
        ),
        pytest.param(
            "allowedPlacementGroups: ['has space']\n",
            "allowedPlacementGroups[0] 'has space'",
            id="group",
        ),
    ],
)
def test_bad_scoped_allowlists_name_the_field(tmp_path: Path, yaml_text: str, needle: str) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml_text)
    with pytest.raises(SettingsError) as info:
        load_settings(path)
    assert needle in str(info.value)
