"""A snapshot of what a real node may change on this host, for before/after checks.

The in-cluster e2e tier takes one before the stack starts and compares it with
one taken after ``down``: sysctls, addresses on lo, links, mounts, cgroups,
kubelet's fixed paths, node daemons still running, iptables rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from atomic_gang_devstack.node import host


def _ip_json(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True, timeout=30)


def snapshot() -> dict[str, object]:
    """What a node may change on this host, for before/after comparisons (teardown tests)."""
    links = json.loads(_ip_json("-j", "link", "show").stdout or "[]")
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    cgroups = {
        str(h): sorted(p.name for p in h.iterdir() if p.is_dir()) for h in host.hierarchies()
    }
    daemons = sorted(
        Path(os.readlink(p / "exe")).name
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _exe_is_node_daemon(p)
    )
    return {
        "sysctls": host.read_sysctls(),
        "lo": sorted(host.lo_addresses()),
        "links": sorted(link["ifname"] for link in links),
        "mounts": sorted(mounts),
        "cgroups": cgroups,
        "paths": {
            p: Path(p).exists()
            for p in (*host.FIXED_PATHS, "/var/lib/kubelet", "/var/lib/cni", str(host.RUN_DIR))
        },
        "node_daemons": daemons,
        "iptables": _iptables_rules(),
    }


def _exe_is_node_daemon(proc: Path) -> bool:
    try:
        return Path(os.readlink(proc / "exe")).name.startswith(host.NODE_DAEMONS)
    except OSError:
        return False


def _iptables_rules() -> str:
    """``iptables-save`` without its timestamps and counters ('' where iptables is absent)."""
    if shutil.which("iptables-save") is None:
        return ""
    done = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if not ln.startswith("#")]
    return "\n".join(ln.split(" [", 1)[0] if ln.startswith(":") else ln for ln in lines)
