"""ClientTokens and names: deterministic, within AWS limits, distinct where it matters."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atomic_gang import GangSpec, GoDuration
from atomic_gang_provisioner.cloud import naming

POOL = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)
ZONE = st.sampled_from(["us-east-1a", "us-east-1b", "us-east-1-bos-1a", "fleet"])
ROLE = "arn:aws:iam::123456789012:role/eks-gang-node-role"


def _spec(pool: str = "pool-a") -> GangSpec:
    return GangSpec(
        pool=pool,
        count=2,
        instance_type="p4d.24xlarge",
        mode="runinstances",
        region="us-east-1",
        node_role_arn=ROLE,
        keep_warm_ttl=GoDuration.of(minutes=10),
        max_lifetime=GoDuration.of(hours=4),
        ami_variant="nvidia",
    )


@given(pool=POOL, gen=st.integers(min_value=0, max_value=10**12), zone=ZONE)
def test_token_is_short_ascii_and_deterministic(pool: str, gen: int, zone: str) -> None:
    token = naming.client_token(pool=pool, generation=gen, zone=zone)
    assert len(token) <= 64
    assert set(token) <= set(string.ascii_letters + string.digits + "-")
    assert token == naming.client_token(pool=pool, generation=gen, zone=zone)


@given(pool=POOL, gen=st.integers(min_value=0, max_value=10**6))
def test_token_differs_by_generation_and_zone(pool: str, gen: int) -> None:
    base = naming.client_token(pool=pool, generation=gen, zone="us-east-1a")
    assert base != naming.client_token(pool=pool, generation=gen + 1, zone="us-east-1a")
    assert base != naming.client_token(pool=pool, generation=gen, zone="us-east-1b")


RESERVATION = st.from_regex(r"cr-[0-9a-f]{17}", fullmatch=True)


@given(pool=POOL, gen=st.integers(min_value=0, max_value=10**12), zone=ZONE, a=RESERVATION)
def test_each_listed_reservation_gets_a_token_of_its_own(
    pool: str, gen: int, zone: str, a: str
) -> None:
    """Trying the next reservation in the same AZ must not reuse the token (EC2 would
    answer IdempotentParameterMismatch for the changed target)."""
    b = a[:-1] + ("0" if a[-1] != "0" else "1")
    ta = naming.client_token(pool=pool, generation=gen, zone=zone, reservation=a)
    tb = naming.client_token(pool=pool, generation=gen, zone=zone, reservation=b)
    plain = naming.client_token(pool=pool, generation=gen, zone=zone)
    assert len({ta, tb, plain}) == 3
    assert max(len(ta), len(tb)) <= 64
    assert set(ta) <= set(string.ascii_letters + string.digits + "-")


def test_long_pools_differing_only_at_the_end_get_different_tokens() -> None:
    a, b = "p" * 62 + "a", "p" * 62 + "b"
    ta = naming.client_token(pool=a, generation=3, zone="us-east-1a")
    tb = naming.client_token(pool=b, generation=3, zone="us-east-1a")
    assert ta != tb
    assert len(ta) == 64
    assert len(tb) == 64


def test_readable_token_when_it_fits() -> None:
    assert (
        naming.client_token(pool="train", generation=7, zone="us-east-1b")
        == "ag-train-g7-us-east-1b"
    )


def test_negative_generation_is_refused() -> None:
    with pytest.raises(ValueError, match="generation"):
        naming.client_token(pool="p", generation=-1, zone="z")


def test_profile_name_convention_and_iam_limit() -> None:
    assert (
        naming.instance_profile_name(cluster="prod", node_role_arn=ROLE)
        == "atomic-gang-instance-profile-prod-eks-gang-node-role"
    )
    long_role = "arn:aws:iam::123456789012:role/" + "r" * 64
    name = naming.instance_profile_name(cluster="c" * 100, node_role_arn=long_role)
    other = naming.instance_profile_name(cluster="c" * 100, node_role_arn=long_role[:-1] + "x")
    assert len(name) == 128
    assert name.startswith("atomic-gang-instance-profile-ccc")
    assert name != other


def test_profile_name_rejects_non_role_arn() -> None:
    with pytest.raises(ValueError, match="not an IAM role ARN"):
        naming.instance_profile_name(cluster="c", node_role_arn="arn:aws:iam::1:user/x")


def test_group_id_is_a_label_value() -> None:
    assert naming.group_id(pool="train", generation=4) == "train-g4"
    long = naming.group_id(pool="p" * 63, generation=123456)
    assert len(long) <= 63


def test_launch_template_name_follows_the_shape() -> None:
    spec = _spec()
    name = naming.launch_template_name(cluster="prod", spec=spec)
    assert name == f"atomic-gang-prod-pool-a-{spec.shape_hash()}"
    changed = spec.model_copy(update={"instance_type": "p5.48xlarge"})
    assert naming.launch_template_name(cluster="prod", spec=changed) != name
    assert len(naming.launch_template_name(cluster="c" * 100, spec=_spec("p" * 63))) <= 128


def test_group_tags_carry_ownership_pool_group_generation() -> None:
    tags = naming.group_tags(cluster="prod", spec=_spec(), generation=5)
    assert tags["atomic-gang.k8s.aws/managed"] == "true"
    assert tags["atomic-gang.k8s.aws/cluster"] == "prod"
    assert tags["atomic-gang.k8s.aws/pool"] == "pool-a"
    assert tags["atomic-gang.k8s.aws/group"] == "pool-a-g5"
    assert tags["atomic-gang.k8s.aws/generation"] == "5"
    assert tags["atomic-gang.k8s.aws/max-lifetime"] == "4h0m0s"


def test_the_shared_template_name_follows_the_template_data_only() -> None:
    name = naming.shared_template_name(cluster="prod", data_digest="0123abcd")
    assert name == "atomic-gang-prod-shape-0123abcd"
    assert len(naming.shared_template_name(cluster="c" * 200, data_digest="d")) <= 128
