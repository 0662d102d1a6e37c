"""The real node's addresses and the three configurations: containerd, CNI, kubelet.

Settings follow what was measured on this kind of machine (a VM without full
cgroup v2 or all capabilities):
cgroup v1 (``failCgroupV1: false``), no CAP_SYS_RESOURCE (containerd's
``restrict_oom_score_adj``), everything containerd owns under the node's own
tree, kubelet out of the host's iptables, and eviction and image GC off (an
imported image can never be pulled back).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYSTEM_TAINT_KEY = "atomic-gang.k8s.aws/system"  # only our system pods tolerate it
SYSTEM_LABEL = "atomic-gang.k8s.aws/system-node"
RUNC = "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
)


@dataclass(frozen=True)
class NodeNet:
    """Per-slot names and addresses, so two stacks on one host never collide."""

    slot: int

    @property
    def node_ip(self) -> str:
        return f"10.87.{self.slot}.2"

    @property
    def subnet(self) -> str:
        return f"10.88.{self.slot}.0/24"

    @property
    def gateway(self) -> str:
        return f"10.88.{self.slot}.1"

    @property
    def bridge(self) -> str:
        return f"agpbr{self.slot}"

    @property
    def network_name(self) -> str:
        return f"atomic-gang-node-{self.slot}"

    @property
    def cgroup_root(self) -> str:
        return f"/atomic-gang-{self.slot}"

    @property
    def run_dir(self) -> Path:
        """Sockets (unix socket paths are limited to 108 bytes; the state dir may be deep)."""
        return Path("/run/atomic-gang-node") / str(self.slot)

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "containerd.sock"


def containerd_config(tree: Path, net: NodeNet, *, pause_image: str) -> str:
    """containerd 2.x configuration (``version = 4``: servers are plugins too), TOML."""
    rt = 'plugins."io.containerd.cri.v1.runtime"'
    runc = f"{rt}.containerd.runtimes.runc"
    return f"""version = 4
root = "{tree / "containerd" / "root"}"
state = "{tree / "containerd" / "state"}"
[plugins."io.containerd.server.v1.grpc"]
  address = "{net.containerd_socket}"
[plugins."io.containerd.server.v1.ttrpc"]
  address = "{net.run_dir / "containerd-ttrpc.sock"}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{tree / "containerd" / "opt"}"
[plugins."io.containerd.nri.v1.nri"]
  disable = true
[plugins."io.containerd.shim.v1.manager"]
  socket_dir = "{net.run_dir / "s"}"
[{rt}]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
[{rt}.containerd]
  default_runtime_name = "runc"
[{runc}]
  runtime_type = "io.containerd.runc.v2"
[{runc}.options]
  BinaryName = "{RUNC}"
  SystemdCgroup = false
  Root = "{tree / "runc"}"
[{rt}.cni]
  bin_dirs = ["{CNI_BIN}"]
  conf_dir = "{tree / "cni" / "net.d"}"
  max_conf_num = 1
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{pause_image}"
"""


def cni_conflist(tree: Path, net: NodeNet) -> dict[str, Any]:
    """bridge + host-local on the slot's /24, and loopback; no masquerade, no iptables."""
    return {
        "cniVersion": "1.0.0",
        "name": net.network_name,
        "plugins": [
            {
                "type": "bridge",
                "bridge": net.bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": net.subnet, "gateway": net.gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(tree / "cni" / "ipam"),
                },
            },
        ],
    }


def write_cni(tree: Path, net: NodeNet) -> None:
    conf = tree / "cni" / "net.d"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "10-atomic-gang.conflist").write_text(json.dumps(cni_conflist(tree, net), indent=2))


def kubelet_config(tree: Path, net: NodeNet, *, port: int, healthz_port: int) -> dict[str, Any]:
    """KubeletConfiguration for a dev node that leaves the host as it found it."""
    off = dict.fromkeys(EVICTION_SIGNALS, "0%")
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "oomScoreAdj": 0,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": net.cgroup_root,
        "failSwapOn": False,
        "maxOpenFiles": 20000,
        "podLogsDir": str(tree / "pod-logs"),
        "volumePluginDir": str(tree / "volume-plugins"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": off,
        "enforceNodeAllocatable": ["pods"],
        "address": net.node_ip,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "makeIPTablesUtilChains": False,
        "containerRuntimeEndpoint": f"unix://{net.containerd_socket}",
        "registerWithTaints": [{"key": SYSTEM_TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "resolvConf": "/etc/resolv.conf",
        # Secret volumes follow their Secret within seconds (the renewal test), not ~1 min.
        "syncFrequency": "10s",
        "nodeStatusReportFrequency": "10s",
    }
