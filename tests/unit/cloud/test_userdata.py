"""nodeadm user data: MIME multipart with a NodeConfig that nodeadm can read."""

from __future__ import annotations

import base64
import email

import yaml

from atomic_gang_provisioner.cloud.userdata import ClusterJoin, gang_taint, user_data, user_data_b64

JOIN = ClusterJoin(
    name="prod",
    endpoint="https://ABCDEF0123456789ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    service_cidr="172.20.0.0/16",
)
LABELS = {
    "atomic-gang.k8s.aws/pool": "train",
    "atomic-gang.k8s.aws/group": "train-g3",
    "atomic-gang.k8s.aws/generation": "3",
    "atomic-gang.k8s.aws/managed": "true",
}


def _node_config() -> dict[str, object]:
    msg = email.message_from_string(user_data(join=JOIN, labels=LABELS, pool="train"))
    assert msg.is_multipart()
    parts = [p for p in msg.walk() if p.get_content_type() == "application/node.eks.aws"]
    assert len(parts) == 1
    payload = parts[0].get_payload()
    assert isinstance(payload, str)
    doc = yaml.safe_load(payload)
    assert isinstance(doc, dict)
    return doc


def test_node_config_carries_join_parameters() -> None:
    doc = _node_config()
    assert doc["apiVersion"] == "node.eks.aws/v1alpha1"
    assert doc["kind"] == "NodeConfig"
    assert doc["spec"]["cluster"] == {  # type: ignore[index]
        "name": "prod",
        "apiServerEndpoint": JOIN.endpoint,
        "certificateAuthority": JOIN.certificate_authority,
        "cidr": "172.20.0.0/16",
    }


def test_kubelet_labels_and_gang_taint() -> None:
    flags = _node_config()["spec"]["kubelet"]["flags"]  # type: ignore[index]
    labels_flag = next(f for f in flags if f.startswith("--node-labels="))
    pairs = dict(p.split("=", 1) for p in labels_flag.removeprefix("--node-labels=").split(","))
    assert pairs == LABELS
    assert "--register-with-taints=atomic-gang.k8s.aws/gang=train:NoExecute" in flags
    assert gang_taint("x") == "atomic-gang.k8s.aws/gang=x:NoExecute"


def test_output_is_deterministic_for_idempotency() -> None:
    a = user_data_b64(join=JOIN, labels=LABELS, pool="train")
    b = user_data_b64(join=JOIN, labels=dict(reversed(LABELS.items())), pool="train")
    assert a == b
    assert base64.b64decode(a).decode().startswith("MIME-Version: 1.0")


def test_generation_changes_the_user_data() -> None:
    other = {**LABELS, "atomic-gang.k8s.aws/generation": "4"}
    assert user_data(join=JOIN, labels=LABELS, pool="train") != user_data(
        join=JOIN, labels=other, pool="train"
    )
