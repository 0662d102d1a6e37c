"""The real nodeadm reads the user data our launch path sends.

Each case launches a gang through the real engine (``Ec2Provider``: the planner, the
launch template, RunInstances or CreateFleet) against moto and our fault layer, reads
back every instance's user data the way the instance gets it (DescribeInstanceAttribute
``userData``, base64-decoded: the bytes IMDS serves), and runs ``nodeadm-check`` on it:
nodeadm's own user-data provider (MIME multipart -> NodeConfig parts -> merge) and its
validation, at the pinned ``NODEADM_VERSION`` (hack/go/nodeadm-userdata, built by
hack/build-bins.sh). The cluster name is EKS's longest (100 characters, with ``_`` and
``-``); the cases cover both modes, the longest pool name, EFA with a cluster placement
group, an On-Demand Capacity Reservation and a Capacity Block. The engine's user data is
also checked against what the planner's own functions make of the same inputs.
"""

from __future__ import annotations

import base64
import json
import random
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from moto import mock_aws

from atomic_gang import GangSpec, GoDuration, keys
from atomic_gang.patterns import MAX_POOL_NAME, RFC1123_LABEL
from atomic_gang.spec import Mode
from atomic_gang_devstack.bins import Bins
from atomic_gang_fakeaws import FakeAws, installed
from atomic_gang_fakeaws.world import seed_backends
from atomic_gang_provisioner.cloud import AcquireRequest, Launched, naming
from atomic_gang_provisioner.cloud.aws import Ec2Provider, EngineConfig, make_clients
from atomic_gang_provisioner.cloud.retry import Backoff
from atomic_gang_provisioner.cloud.userdata import (
    ClusterJoin,
    kubelet_flags,
    user_data,
    user_data_b64,
)
from tests.integration.cloud.conftest import (
    REGION,
    TYPE,
    client_session,
    fake_aws_env,
    live,
)
from tests.support.clock import ManualClock

# EKS allows 1-100 characters of [A-Za-z0-9_-] (starting alphanumeric): the longest.
CLUSTER = "My_Cluster-" + "x" * 89
LONGEST_POOL = "llm-pretrain-" + "a" * 50
GENERATION = 7
NODEADM_EXIT_PARSE, NODEADM_EXIT_VALIDATE = 1, 2  # hack/go/nodeadm-userdata/main.go
# What the kubelet accepts in --node-labels (apimachinery's qualified name and label value).
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_KEY = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$"
)
LABEL_VALUE = re.compile(rf"^({_NAME})?$")  # and at most 63 characters
_LAUNCH_CALL = {"runinstances": "RunInstances", "fleet": "CreateFleet"}


@dataclass(frozen=True)
class Case:
    mode: Mode
    pool: str = "train"
    count: int = 2
    efa: bool = False  # with the pool's own cluster placement group
    reservation: str | None = None  # "odcr" (On-Demand Capacity Reservation) or "block"


CASES = {
    "runinstances": Case("runinstances"),
    "fleet": Case("fleet"),
    "runinstances-longest-pool-efa-placement": Case(
        "runinstances", pool=LONGEST_POOL, count=4, efa=True
    ),
    "fleet-longest-pool-efa-placement": Case("fleet", pool=LONGEST_POOL, count=4, efa=True),
    "runinstances-odcr": Case("runinstances", pool=LONGEST_POOL, reservation="odcr"),
    "fleet-odcr": Case("fleet", reservation="odcr"),
    "runinstances-capacity-block": Case("runinstances", reservation="block"),
    "fleet-capacity-block": Case("fleet", pool=LONGEST_POOL, reservation="block"),
}


@dataclass(frozen=True)
class Launch:
    """One launched gang: what EC2 holds, and what nodeadm made of it."""

    spec: GangSpec
    described: dict[str, Any]  # eks:DescribeCluster's cluster
    user_data: bytes  # every instance's (they are one)
    parsed: dict[str, Any] = field(default_factory=dict)  # nodeadm's NodeConfig

    @property
    def join(self) -> ClusterJoin:
        return ClusterJoin(
            name=CLUSTER,
            endpoint=self.described["endpoint"],
            certificate_authority=self.described["certificateAuthority"]["data"],
            service_cidr=self.described["kubernetesNetworkConfig"]["serviceIpv4Cidr"],
        )


def nodeadm(binary: Path, user_data: bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary)],
        input=user_data.decode(),
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def parsed_by_nodeadm(binary: Path, user_data: bytes) -> dict[str, Any]:
    done = nodeadm(binary, user_data)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


@pytest.fixture(scope="module")
def nodeadm_check() -> Path:
    bins = Bins.load()
    bins.ensure(("nodeadm-check",))  # built when missing, never skipped
    return bins.path("nodeadm-check")


@pytest.fixture(scope="module")
def session() -> Any:
    return client_session()


@pytest.fixture(scope="module")
def aws_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        fake_aws_env(patch)
        yield


def _reserve(fake: FakeAws, clock: ManualClock, case: Case) -> str | None:
    if case.reservation == "odcr":
        fake.add_reservation("cr-0dc1", zone=REGION + "a", instance_type=TYPE, count=case.count)
        return "cr-0dc1"
    if case.reservation == "block":
        fake.add_reservation(
            "cr-b10c",
            zone=REGION + "b",
            instance_type=TYPE,
            count=case.count,
            kind="capacity-block",
            start_date=clock.now() - timedelta(minutes=5),
            end_date=clock.now() + timedelta(hours=6),
        )
        return "cr-b10c"
    return None


def launch(session: Any, case: Case) -> Launch:
    """The gang through the real engine; its user data as each instance would read it."""
    clock = ManualClock()
    with mock_aws(), installed(clock=clock.monotonic, wall=clock.now) as fake:
        world = seed_backends(region=REGION, cluster=CLUSTER)
        reservation = _reserve(fake, clock, case)
        spec = GangSpec(
            pool=case.pool,
            count=case.count,
            instance_type=TYPE,
            mode=case.mode,
            region=REGION,
            node_role_arn=world.node_role_arn,
            keep_warm_ttl=GoDuration.of(minutes=10),
            max_lifetime=GoDuration.of(hours=4),
            ami_variant="nvidia",
            capacity_reservation_id=reservation,
            placement="cluster" if case.efa else None,
            efa="max" if case.efa else None,
        )
        engine = Ec2Provider(
            clients=make_clients(region=REGION, session=session),
            config=EngineConfig(
                cluster=CLUSTER,
                backoff=Backoff(
                    max_attempts=4, base_seconds=0.5, cap_seconds=4, rng=random.Random(3)
                ),
            ),
            sleeper=clock.sleep,
            wall=clock.now,
            monotonic=clock.monotonic,
        )
        result = engine.acquire(AcquireRequest(spec=spec, generation=GENERATION))
        assert isinstance(result, Launched), result
        assert len(result.instance_ids) == case.count
        # The case is what it says: its mode's launch call, EFA in its placement group.
        called = {c["action"] for c in fake.calls() if c["service"] == "ec2"}
        assert {"RunInstances", "CreateFleet"} & called == {_LAUNCH_CALL[case.mode]}
        if case.efa:
            group = naming.placement_group_name(cluster=CLUSTER, pool=case.pool)
            assert {i.placement.group_name for i in live()} == {group}
            assert all("efa" in {n.interface_type for n in i.nics.values()} for i in live())
        if reservation is not None:
            assert result.reservation is not None
            assert result.reservation.reservation_id == reservation
        ec2, eks = session.client("ec2"), session.client("eks")
        found = {
            base64.b64decode(
                ec2.describe_instance_attribute(InstanceId=i, Attribute="userData")["UserData"][
                    "Value"
                ]
            )
            for i in result.instance_ids
        }
        described = eks.describe_cluster(name=CLUSTER)["cluster"]
    assert len(found) == 1, "one gang, one user data"
    return Launch(spec=spec, described=described, user_data=found.pop())


@pytest.fixture(scope="module", params=list(CASES), ids=list(CASES))
def launched(
    request: pytest.FixtureRequest, session: Any, aws_env: None, nodeadm_check: Path
) -> Launch:
    sent = launch(session, CASES[request.param])
    return replace(sent, parsed=parsed_by_nodeadm(nodeadm_check, sent.user_data))


def test_the_extremes_are_the_extremes() -> None:
    assert len(CLUSTER) == 100
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", CLUSTER)
    assert len(LONGEST_POOL) == MAX_POOL_NAME == 63
    assert RFC1123_LABEL.match(LONGEST_POOL)  # a pool name the webhook accepts


def test_nodeadm_reads_the_cluster_our_launch_path_names(launched: Launch) -> None:
    cluster = launched.parsed["spec"]["cluster"]
    assert cluster["name"] == CLUSTER
    assert cluster["apiServerEndpoint"] == launched.described["endpoint"]
    assert cluster["cidr"] == launched.described["kubernetesNetworkConfig"]["serviceIpv4Cidr"]
    # nodeadm holds the CA as bytes (decoded from our base64): the same PEM EKS gave.
    assert cluster["certificateAuthority"] == launched.described["certificateAuthority"]["data"]
    pem = base64.b64decode(cluster["certificateAuthority"])
    assert x509.load_pem_x509_certificate(pem).subject.rfc4514_string() == "CN=kubernetes"
    assert "enableOutpost" not in cluster


def test_our_labels_and_gang_taint_reach_the_kubelet_flags_as_nodeadm_read_them(
    launched: Launch,
) -> None:
    spec = launched.spec
    kubelet = launched.parsed["spec"]["kubelet"]
    assert "config" not in kubelet  # we set flags only: nodeadm's kubelet config is its own
    flags: list[str] = kubelet["flags"]
    (labels_flag,) = [f for f in flags if f.startswith("--node-labels=")]
    (taints_flag,) = [f for f in flags if f.startswith("--register-with-taints=")]
    labels = dict(kv.split("=", 1) for kv in labels_flag.removeprefix("--node-labels=").split(","))
    assert labels[keys.POOL] == spec.pool
    assert labels[keys.GROUP] == naming.group_id(pool=spec.pool, generation=GENERATION)
    assert labels[keys.GENERATION] == str(GENERATION)
    assert labels[keys.MANAGED] == "true"
    assert taints_flag == f"--register-with-taints={keys.GANG_TAINT}={spec.pool}:NoExecute"
    assert len(flags) == 2
    # nodeadm hands the kubelet its flags joined by spaces (KUBELET_ARGS in the kubelet's
    # environment file): a flag with whitespace in it would come apart.
    assert not [f for f in flags if re.search(r"\s", f)]
    # ...and the kubelet refuses to start on a label it cannot register.
    refused = {
        k: v
        for k, v in labels.items()
        if not (LABEL_KEY.match(k) and LABEL_VALUE.match(v) and len(v) <= 63)
    }
    assert refused == {}


def test_the_engine_sends_what_the_planners_functions_make(launched: Launch) -> None:
    """RunInstances carries ``user_data`` (botocore base64s it); a fleet's template version
    carries ``user_data_b64``: either way the instance reads the same document."""
    spec = launched.spec
    labels = naming.node_labels(spec=spec, generation=GENERATION)
    if spec.mode == "fleet":
        sent = base64.b64decode(user_data_b64(join=launched.join, labels=labels, pool=spec.pool))
    else:
        sent = user_data(join=launched.join, labels=labels, pool=spec.pool).encode()
    assert launched.user_data == sent
    assert launched.parsed["spec"]["kubelet"]["flags"] == kubelet_flags(
        labels=labels, pool=spec.pool
    )


def _simple_user_data(**join: str) -> bytes:
    base = {
        "name": CLUSTER,
        "endpoint": "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
        "certificate_authority": base64.b64encode(b"not a certificate, but bytes").decode(),
        "service_cidr": "10.100.0.0/16",
    }
    pool = "train"
    labels = {keys.POOL: pool, keys.MANAGED: "true"}
    return user_data(join=ClusterJoin(**{**base, **join}), labels=labels, pool=pool).encode()


@pytest.mark.parametrize(
    ("broken", "needle"),
    [
        pytest.param(
            lambda u: u.replace(b"kind: NodeConfig", b"kind: NodeConfiguration"),
            "NodeConfiguration",
            id="unknown-kind",
        ),
        pytest.param(
            lambda u: u.replace(b"node.eks.aws/v1alpha1", b"node.eks.aws/v9"),
            "v9",
            id="unknown-version",
        ),
        pytest.param(
            lambda u: u.replace(b"  kubelet:\n", b"  kubelet: [\n"),
            "yaml",
            id="broken-yaml",
        ),
        pytest.param(
            lambda u: re.sub(rb'certificateAuthority: "[^"]*"', b'certificateAuthority: "*"', u),
            "illegal base64",
            id="ca-not-base64",
        ),
        pytest.param(
            lambda u: u.replace(b"application/node.eks.aws", b"text/x-shellscript"),
            "Could not find NodeConfig within UserData",
            id="no-node-config-part",
        ),
    ],
)
def test_nodeadm_refuses_a_broken_node_config(
    nodeadm_check: Path, broken: Any, needle: str, tmp_path: Path
) -> None:
    good = _simple_user_data()
    assert parsed_by_nodeadm(nodeadm_check, good)["spec"]["cluster"]["name"] == CLUSTER
    bad = broken(good)
    assert bad != good
    path = tmp_path / "user-data"  # from a file this time (stdin above)
    path.write_bytes(bad)
    done = subprocess.run(
        [str(nodeadm_check), str(path)], capture_output=True, text=True, check=False, timeout=30
    )
    assert done.returncode == NODEADM_EXIT_PARSE, (done.stdout, done.stderr)
    assert needle in done.stderr
    assert done.stdout == ""


def test_nodeadm_validation_refuses_a_node_config_without_a_service_cidr(
    nodeadm_check: Path,
) -> None:
    """What the launch path would send if DescribeCluster had no ``serviceIpv4Cidr``:
    it parses, and nodeadm init's validation stops the node."""
    done = nodeadm(nodeadm_check, _simple_user_data(service_cidr=""))
    assert done.returncode == NODEADM_EXIT_VALIDATE, (done.stdout, done.stderr)
    assert "CIDR is missing" in done.stderr
