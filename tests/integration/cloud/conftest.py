"""moto + the fidelity layer, a seeded world and an engine, with a fake clock."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.config import Config
from moto import mock_aws
from moto.ec2.models import ec2_backends

from atomic_gang import GangSpec, GoDuration
from atomic_gang_fakeaws import FakeAws, installed
from atomic_gang_fakeaws.world import World, seed_backends
from atomic_gang_provisioner.cloud.aws import AwsClients, Ec2Provider, EngineConfig, make_clients
from atomic_gang_provisioner.cloud.retry import Backoff
from tests.support.clock import ManualClock

REGION = "us-east-1"
CLUSTER = "demo"
TYPE = "p4d.24xlarge"


def fake_aws_env(patch: pytest.MonkeyPatch) -> None:
    """moto's placeholder credentials and our region, whatever the machine has set."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        patch.setenv(name, "testing")
    patch.setenv("AWS_DEFAULT_REGION", REGION)
    patch.delenv("AWS_PROFILE", raising=False)
    # moto otherwise builds ~1300 AMIs for every fresh EC2 backend (≈0.4 s each test).
    patch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


def client_session() -> Any:
    """A boto3 session signing with moto's placeholder keys in our region."""
    return boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        botocore_session=botocore.session.get_session(),
        region_name=REGION,
    )


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_aws_env(monkeypatch)


@pytest.fixture(scope="session")
def session() -> Any:
    """One session and one set of clients for the whole run.

    moto intercepts at botocore's before-send hook, so clients outlive each
    test's ``mock_aws``; building them once saves parsing service models.
    """
    return client_session()


@pytest.fixture(scope="session")
def admin_clients(session: Any) -> dict[str, Any]:
    # No botocore retries: a test sees exactly the answer the layer gave.
    once = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    return {name: session.client(name, config=once) for name in ("ec2", "iam", "eks", "ssm")}


@pytest.fixture
def admin(fake: FakeAws, admin_clients: dict[str, Any]) -> dict[str, Any]:
    """Plain boto3 clients for setting scenes and checking results (only under moto)."""
    return admin_clients


@pytest.fixture(scope="session")
def shared_clients(session: Any) -> AwsClients:
    return make_clients(region=REGION, session=session)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> Iterator[FakeAws]:
    with mock_aws(), installed(clock=clock.monotonic, wall=clock.now) as layer:
        yield layer


@pytest.fixture
def world(fake: FakeAws) -> World:
    return seed_backends(region=REGION, cluster=CLUSTER)


@pytest.fixture
def clients(shared_clients: AwsClients, world: World) -> AwsClients:
    return shared_clients


Factory = Callable[..., Ec2Provider]


@pytest.fixture
def make_provider(clients: AwsClients, clock: ManualClock) -> Factory:
    """A fresh engine each call: a new one is what a restarted controller has."""

    def build(**overrides: Any) -> Ec2Provider:
        config = EngineConfig(
            cluster=overrides.pop("cluster", CLUSTER),
            backoff=Backoff(max_attempts=4, base_seconds=0.5, cap_seconds=4, rng=random.Random(3)),
            eni_wait_seconds=overrides.pop("eni_wait_seconds", 20.0),
            self_manage_instance_profile=overrides.pop("self_manage_instance_profile", False),
            **({"batch": overrides.pop("batch")} if "batch" in overrides else {}),
        )
        return Ec2Provider(
            clients=overrides.pop("clients", clients),
            config=config,
            sleeper=clock.sleep,
            wall=clock.now,
            monotonic=clock.monotonic,
            aws_auth=overrides.pop("aws_auth", None),
            on_reservation=overrides.pop("on_reservation", None),
        )

    return build


@pytest.fixture
def provider(make_provider: Factory) -> Ec2Provider:
    return make_provider()


@pytest.fixture
def make_spec(world: World) -> Callable[..., GangSpec]:
    def build(**fields: Any) -> GangSpec:
        base: dict[str, Any] = {
            "pool": "train",
            "count": 3,
            "instance_type": TYPE,
            "mode": "runinstances",
            "region": REGION,
            "node_role_arn": world.node_role_arn,
            "keep_warm_ttl": GoDuration.of(minutes=10),
            "max_lifetime": GoDuration.of(hours=4),
            "ami_variant": "nvidia",
        }
        base.update(fields)
        return GangSpec(**base)

    return build


def backend(account: str = "123456789012") -> Any:
    return ec2_backends[account][REGION]


def tags_of(resource_id: str) -> dict[str, str]:
    found: dict[str, str] = backend().tags.get(resource_id, {})
    return found


def live() -> list[Any]:
    """Live instances straight from moto's backend (no API call, nothing logged)."""
    return [
        inst
        for inst in backend().all_instances()
        if inst.state in ("pending", "running", "stopping", "stopped")
    ]


def pool_instances(pool: str, generation: int | None = None) -> list[Any]:
    out = [i for i in live() if tags_of(i.id).get("atomic-gang.k8s.aws/pool") == pool]
    if generation is not None:
        gen = str(generation)
        out = [i for i in out if tags_of(i.id).get("atomic-gang.k8s.aws/generation") == gen]
    return out
