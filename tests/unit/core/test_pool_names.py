"""Which GangNodePool a namespace's pool label names (``atomic_gang.pool_access``)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from atomic_gang.pool_access import PoolNamespaces, namespaced, object_name
from atomic_gang_provisioner.workload import tenancy
from tests.support.jobs import settings

# An object name's parts (DNS-1123 subdomain) and a label value's limit: what the name
# must satisfy to be a GangNodePool's name, a Node label's value and the gang taint's.
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABELS = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


def test_a_label_names_a_pool_of_its_namespace_unless_the_admin_lists_it() -> None:
    shared = (PoolNamespaces(names="shared-*", namespaces=("team-a", "team-b")),)
    assert object_name("pretrain", "team-a", shared) == "team-a.pretrain"
    assert object_name("pretrain", "team-b", shared) == "team-b.pretrain"
    assert object_name("shared-h100", "team-a", shared) == "shared-h100"
    assert object_name("shared-h100", "team-c", shared) == "shared-h100"  # then Rejected
    assert namespaced("team-a.pretrain")
    assert not namespaced("shared-h100")


@given(namespace=LABELS, label=LABELS, other=LABELS)
def test_derived_names_are_valid_short_and_never_shared_by_two_namespaces(
    namespace: str, label: str, other: str
) -> None:
    name = object_name(label, namespace, ())
    assert len(name) <= 63
    assert SUBDOMAIN.match(name), name
    assert namespaced(name)
    if other != namespace:
        assert object_name(label, other, ()) != name


def test_a_pattern_of_the_admins_never_makes_a_namespaces_own_pool_shared() -> None:
    """'*-gpu' matches 'team-b.x-gpu' as a string; a namespace's own name is not listed."""
    listed = settings(poolNamespaces=[{"names": "*-gpu", "namespaces": ["team-a"]}])
    assert tenancy.access(None, name="team-b.x-gpu", namespace="team-b", settings=listed) == "owner"
    assert tenancy.access(None, name="x-gpu", namespace="team-b", settings=listed) == "reserved"
