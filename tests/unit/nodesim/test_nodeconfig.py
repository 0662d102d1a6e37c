"""nodeadm's view of user data: our own launch template's user data joins; broken
NodeConfigs (unparseable, missing endpoint/CA/CIDR, unknown fields) never do."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from atomic_gang_nodesim.nodeconfig import NodeConfigError, parse_user_data
from atomic_gang_provisioner.cloud.userdata import ClusterJoin, user_data

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CA = base64.b64encode(PEM).decode()
JOIN = ClusterJoin(
    name="prod",
    endpoint="https://ABCDEF0123456789ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority=CA,
    service_cidr="172.20.0.0/16",
)
LABELS = {
    "atomic-gang.k8s.aws/pool": "train",
    "atomic-gang.k8s.aws/group": "train-g3",
    "atomic-gang.k8s.aws/generation": "3",
    "atomic-gang.k8s.aws/managed": "true",
}


def _ours(**overrides: str) -> bytes:
    join = dataclasses.replace(JOIN, **overrides)
    return user_data(join=join, labels=LABELS, pool="train").encode()


def _bare(cluster: str, flags: str = "") -> bytes:
    return (
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
        f"  cluster:\n{cluster}\n  kubelet:\n    flags: [{flags}]\n"
    ).encode()


GOOD_CLUSTER = (
    f"    name: prod\n    apiServerEndpoint: {JOIN.endpoint}\n"
    f"    certificateAuthority: {CA}\n    cidr: 172.20.0.0/16"
)


def test_our_user_data_joins_with_its_labels_and_taint() -> None:
    join = parse_user_data(_ours())
    assert (join.cluster, join.endpoint, join.cidr) == ("prod", JOIN.endpoint, "172.20.0.0/16")
    assert join.certificate_authority == CA
    assert join.labels == LABELS
    assert [t.to_dict() for t in join.taints] == [
        {"key": "atomic-gang.k8s.aws/gang", "value": "train", "effect": "NoExecute"}
    ]


def test_bare_nodeconfig_yaml_is_read_too() -> None:
    join = parse_user_data(_bare(GOOD_CLUSTER, '"--node-labels=a=b"'))
    assert join.labels == {"a": "b"}


def test_later_documents_override_and_flags_accumulate() -> None:
    second = (
        b"---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
        b"spec: {cluster: {cidr: 10.100.0.0/16}, kubelet: {flags: ['--node-labels=c=d']}}\n"
    )
    join = parse_user_data(_bare(GOOD_CLUSTER, '"--node-labels=a=b"') + second)
    assert join.cidr == "10.100.0.0/16"
    assert join.labels == {"a": "b", "c": "d"}


@pytest.mark.parametrize(
    ("user_data", "message"),
    [
        pytest.param(_ours(endpoint=""), "lacks apiServerEndpoint", id="no-endpoint"),
        pytest.param(_ours(certificate_authority=""), "lacks certificateAuthority", id="no-ca"),
        pytest.param(_ours(service_cidr=""), "lacks cidr", id="no-cidr"),
        pytest.param(_ours(certificate_authority="not base64!"), "not base64", id="ca-garbage"),
        pytest.param(
            _ours(certificate_authority=base64.b64encode(b"hello").decode()),
            "not a base64 PEM",
            id="ca-not-pem",
        ),
        pytest.param(_ours(endpoint="http://plain"), "not https", id="http-endpoint"),
        pytest.param(b"MIME-Version: 1.0\n\nhello", "not multipart", id="mime-not-multipart"),
        pytest.param(
            _ours().replace(b"application/node.eks.aws", b"text/x-shellscript"),
            "no application/node.eks.aws part",
            id="no-nodeconfig-part",
        ),
        pytest.param(b"kind: [unclosed", "not valid YAML", id="bad-yaml"),
        pytest.param(b"", "holds no NodeConfig", id="empty"),
        pytest.param(
            _bare(GOOD_CLUSTER + "\n    endpoint: typo"), "Extra inputs", id="unknown-field-strict"
        ),
        pytest.param(
            _bare(GOOD_CLUSTER).replace(b"NodeConfig", b"NodeConfg"), "kind", id="wrong-kind"
        ),
        pytest.param(
            _bare(GOOD_CLUSTER, '"--register-with-taints=a=b:Sometimes"'),
            "kubelet would not start",
            id="bad-taint-effect",
        ),
    ],
)
def test_broken_user_data_never_joins(user_data: bytes, message: str) -> None:
    with pytest.raises(NodeConfigError, match=message):
        parse_user_data(user_data)
