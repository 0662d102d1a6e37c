"""The real node's configurations carry the settings this machine needs (real-node note)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from atomic_gang_devstack.node.config import (
    SYSTEM_TAINT_KEY,
    NodeNet,
    cni_conflist,
    containerd_config,
    kubelet_config,
)


@pytest.mark.parametrize("slot", [0, 7])
def test_slots_never_share_names_or_addresses(slot: int) -> None:
    a, b = NodeNet(slot), NodeNet(slot + 1)
    for attr in ("node_ip", "subnet", "gateway", "bridge", "cgroup_root", "run_dir"):
        assert getattr(a, attr) != getattr(b, attr), attr
    assert a.node_ip.startswith("10.87.")
    assert a.subnet.startswith("10.88.")  # clashes with neither 10.0.0.0/24 nor kwok's 10.244/16
    assert len(str(a.containerd_socket)) < 108  # unix socket path limit


def test_kubelet_config_survives_cgroup_v1_and_keeps_out_of_iptables(tmp_path: Path) -> None:
    cfg = kubelet_config(tmp_path, NodeNet(3), port=20250, healthz_port=20248)
    assert cfg["failCgroupV1"] is False  # else kubelet exits at once on cgroup v1
    assert cfg["makeIPTablesUtilChains"] is False
    assert cfg["cgroupRoot"] == "/atomic-gang-3"
    assert cfg["address"] == "10.87.3.2"
    assert set(cfg["evictionHard"].values()) == {"0%"}  # an imported image is never pulled back
    assert cfg["imageGCHighThresholdPercent"] == 100
    assert cfg["registerWithTaints"][0]["key"] == SYSTEM_TAINT_KEY
    assert cfg["containerRuntimeEndpoint"] == "unix:///run/atomic-gang-node/3/containerd.sock"
    assert str(cfg["podLogsDir"]).startswith(str(tmp_path))


def test_containerd_config_is_v4_with_everything_under_the_node_tree(tmp_path: Path) -> None:
    text = containerd_config(tmp_path, NodeNet(2), pause_image="localhost/pause:x")
    cfg = tomllib.loads(text)
    plugins = cfg["plugins"]
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert cfg["version"] == 4
    assert runtime["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE here
    assert runtime["netns_mounts_under_state_dir"] is True
    runc = runtime["containerd"]["runtimes"]["runc"]["options"]
    assert runc["SystemdCgroup"] is False
    assert runc["Root"].startswith(str(tmp_path))
    assert plugins["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "localhost/pause:x"
    assert plugins["io.containerd.nri.v1.nri"]["disable"] is True
    grpc = plugins["io.containerd.server.v1.grpc"]["address"]  # not the v3 [grpc] table
    assert grpc == "/run/atomic-gang-node/2/containerd.sock"
    for key in ("root", "state"):
        assert cfg[key].startswith(str(tmp_path))


def test_cni_is_a_bridge_of_the_slot_without_masquerade(tmp_path: Path) -> None:
    conf = cni_conflist(tmp_path, NodeNet(1))
    (bridge,) = conf["plugins"]
    assert bridge["bridge"] == "agpbr1"
    assert bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.88.1.0/24", "gateway": "10.88.1.1"}]]
    assert bridge["ipam"]["dataDir"].startswith(str(tmp_path))
