"""What the simulator's integration tests share: in-process moto + our layer with a
seeded world, boto3 clients by access key, a dict of Nodes standing in for the API
server, a clock the tests step, and a simulator wired to all of them."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import boto3
import botocore.session
import pytest
from moto import mock_aws

from atomic_gang_fakeaws import FakeAws, installed
from atomic_gang_fakeaws.world import World, seed_backends
from atomic_gang_kubelite import AlreadyExistsError, NotFoundError
from atomic_gang_nodesim.ec2 import Ec2View, States
from atomic_gang_nodesim.knobs import Knobs
from atomic_gang_nodesim.sim import Simulator
from tests.support.clock import ManualClock

REGION, CLUSTER = "us-east-1", "dev"


class FakeKube:
    """The few calls the simulator makes (``NodeApi``), over a dict of Nodes."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.config_maps: dict[str, dict[str, Any]] = {}  # kube-system/<name>
        self._uid = itertools.count(1)

    def list(self, res: Any, **_: Any) -> list[dict[str, Any]]:
        return [copy.deepcopy(n) for n in self.nodes.values()]

    def create(self, res: Any, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        if name in self.nodes:
            raise AlreadyExistsError(409, "AlreadyExists", name)
        obj = copy.deepcopy(obj)
        obj["metadata"]["uid"] = f"uid-{next(self._uid)}"
        self.nodes[name] = obj
        return obj

    def get(self, res: Any, name: str, **kw: Any) -> dict[str, Any]:
        where = self.config_maps if res.plural == "configmaps" else self.nodes
        if res.plural == "configmaps" and kw.get("namespace") != "kube-system":
            where = {}
        if name not in where:
            raise NotFoundError(404, "NotFound", name)
        return copy.deepcopy(where[name])

    def delete(self, res: Any, name: str, **_: Any) -> None:
        if self.nodes.pop(name, None) is None:
            raise NotFoundError(404, "NotFound", name)

    def patch(
        self, res: Any, name: str, patch: Mapping[str, Any], *, subresource: str = ""
    ) -> dict[str, Any]:
        """A merge patch of the maps the simulator patches: annotations, or on
        ``status``, capacity and allocatable."""
        node = self.nodes[name]
        if subresource == "status":
            for key, values in patch["status"].items():
                node["status"].setdefault(key, {}).update(values)
        else:
            node["metadata"]["annotations"].update(patch["metadata"]["annotations"])
        return copy.deepcopy(node)

    def replace_status(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        self.nodes[obj["metadata"]["name"]]["status"] = copy.deepcopy(obj["status"])
        return obj


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAws]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    with mock_aws(), installed() as layer:
        layer.state.unthrottled.add("nodesim")
        yield layer


@pytest.fixture
def world(fake: FakeAws) -> World:
    return seed_backends(region=REGION, cluster=CLUSTER)


BOTOCORE = botocore.session.get_session()  # service models parsed once per run


def client(service: str, key: str) -> Any:
    session = boto3.session.Session(
        aws_access_key_id=key,
        aws_secret_access_key="x",
        region_name=REGION,
        botocore_session=BOTOCORE,
    )
    return session.client(service)


def simulator(
    kube: FakeKube, clock: ManualClock, states: States | None = None, **knobs: Any
) -> Simulator:
    view = Ec2View(
        ec2=client("ec2", "nodesim"),
        eks=client("eks", "nodesim"),
        iam=client("iam", "nodesim"),
        cluster=CLUSTER,
        states=states,
    )
    return Simulator(
        view=view,
        kube=kube,
        region=REGION,
        knobs=Knobs(**knobs),
        clock=clock,
    )
