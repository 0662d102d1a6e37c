"""What a real kubelet node changes on the host, claimed per stack and undone at the end.

A stack's node takes a *slot* N: node IP 10.87.N.2/32 on ``lo`` (the kernel here
has no dummy links), bridge ``agpbrN``, pod CIDR 10.88.N.0/24, cgroup root
``/atomic-gang-N`` in every hierarchy. The address on ``lo`` is the claim: a slot
is free while it is absent (checked and taken under one host-wide lock).

kubelet and the bridge plugin also change host-wide sysctls and create fixed
paths whatever they are told. Those are refcounted across stacks in
``/run/atomic-gang-node/host.json``: the first stack records the originals, the
last one restores them. A holder whose stack died without ``down`` (replaced by
another stack, killed) is undone by the next stack that starts, with a node or
without (:func:`sweep`); once no live holder is left, so are the sysctls and paths.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from atomic_gang_devstack.node.config import NodeNet
from atomic_gang_devstack.procs import parse_stat

RUN_DIR = Path("/run/atomic-gang-node")
REGISTRY = RUN_DIR / "host.json"
PROC_SYS = Path("/proc/sys")
CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_SLOTS = 16
# kubelet's kernel tunables (setupKernelTunables) and the bridge plugin's forwarding.
SYSCTLS = (
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "net/ipv4/ip_forward",
)
# Created by kubelet / libcni wherever --root-dir points.
FIXED_PATHS = ("/var/lib/kubelet/device-plugins", "/var/log/containers", "/var/lib/cni/results")


NODE_DAEMONS = ("containerd", "kubelet", "runc", "ctr")


class NodeHostError(RuntimeError):
    """The host could not be prepared (no free slot, a failed ip command)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if check and done.returncode != 0:
        raise NodeHostError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def lo_addresses() -> set[str]:
    out = json.loads(_ip("-j", "-4", "addr", "show", "dev", "lo").stdout or "[]")
    return {a["local"] for link in out for a in link.get("addr_info", [])}


@contextlib.contextmanager
def _host_lock() -> Iterator[None]:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    with (RUN_DIR / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_sysctls() -> dict[str, str]:
    return {k: (PROC_SYS / k).read_text().strip() for k in SYSCTLS}


def _topmost_missing(path: str) -> str | None:
    """The highest ancestor of ``path`` (or itself) that does not exist yet."""
    missing = None
    for parent in [Path(path), *Path(path).parents]:
        if parent.exists():
            break
        missing = str(parent)
    return missing


def _load_registry() -> dict[str, object]:
    try:
        return dict(json.loads(REGISTRY.read_text()))
    except (OSError, ValueError, TypeError):
        return {}


def sweep() -> list[str]:
    """Undo what abandoned nodes left on the host: each holder whose stack died without
    ``down`` (its daemons and its launcher gone), and, once no live holder is left, the
    shared sysctls and paths. Every stack calls it as it starts; returns what could not
    be undone."""
    if not REGISTRY.exists():  # no node was ever left here: nothing to take a lock for
        return []
    with _host_lock():
        reg, problems = _swept(_load_registry())
    if not reg:  # as the last release does: nothing of ours stays in /run
        shutil.rmtree(RUN_DIR, ignore_errors=True)
    return problems


def _swept(reg: dict[str, object]) -> tuple[dict[str, object], list[str]]:
    """``reg`` without its dead holders (their nodes undone), or, with no holder left,
    empty (the host put back as it was without any node). Under the host lock."""
    holders = _holders(reg)
    problems: list[str] = []
    for slot, held in list(holders.items()):
        if not _alive(NodeNet(slot), held):
            problems += _undo_node(NodeNet(slot), Path(str(held.get("tree", ""))))
            del holders[slot]
    if not holders:
        if reg:
            problems += _restore_host(reg)
            REGISTRY.unlink(missing_ok=True)
        return {}, problems
    reg = {**reg, "holders": {str(k): v for k, v in holders.items()}}
    REGISTRY.write_text(json.dumps(reg, indent=2))
    return reg, problems


def claim(tree: Path) -> NodeNet:
    """Take a free slot: its address on lo, and a place among the host-change holders.

    Abandoned holders are undone first (:func:`sweep`), so a crash never pins a slot or
    keeps the host's sysctls changed for good.
    """
    with _host_lock():
        reg, _ = _swept(_load_registry())
        holders = _holders(reg)
        taken = lo_addresses()
        free = (n for n in range(MAX_SLOTS) if n not in holders and NodeNet(n).node_ip not in taken)
        chosen = next(free, None)
        if chosen is None:
            raise NodeHostError(f"all {MAX_SLOTS} node slots are taken (addresses 10.87.N.2 on lo)")
        net = NodeNet(chosen)
        if "sysctls" not in reg:  # we are first: what the host looks like without any node
            reg = {
                "sysctls": read_sysctls(),
                "created": [m for p in FIXED_PATHS if (m := _topmost_missing(p))],
            }
        holders[chosen] = {"tree": str(tree), "launcher": _process_id(os.getpid())}
        reg["holders"] = {str(k): v for k, v in holders.items()}
        _ip("addr", "add", f"{net.node_ip}/32", "dev", "lo")
        REGISTRY.write_text(json.dumps(reg, indent=2))
        _make_cgroup_roots(net)
        return net


def _holders(reg: dict[str, object]) -> dict[int, dict[str, object]]:
    raw = reg.get("holders")
    return {int(k): dict(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _process_id(pid: int) -> str:
    """``pid:start-ticks``: a recycled PID never passes for the launcher that claimed."""
    try:
        return f"{pid}:{parse_stat(Path(f'/proc/{pid}/stat').read_text()).start_ticks}"
    except (OSError, ValueError):
        return ""


def _alive(net: NodeNet, held: dict[str, object]) -> bool:
    """Its address is still on lo and its daemons run (or its launcher is starting them)."""
    if net.node_ip not in lo_addresses():
        return False
    launcher = str(held.get("launcher", ""))
    starting = bool(launcher) and _process_id(int(launcher.split(":", maxsplit=1)[0])) == launcher
    # Shims outlive a crash (they are meant to): only containerd or kubelet count.
    daemons = _node_daemon_pids(net.run_dir, names=("containerd-v", "kubelet"))
    return starting or bool(daemons)


def _undo_node(net: NodeNet, tree: Path) -> list[str]:
    """Everything one node changed on the host except the shared sysctls and paths."""
    problems: list[str] = []
    kill_node_processes(net, tree)
    if str(tree) not in ("", "."):
        problems += unmount_under(tree)
    problems += _remove_links(net)
    problems += _remove_cgroups(net)
    _ip("addr", "del", f"{net.node_ip}/32", "dev", "lo", check=False)
    _remove_cni_cache(net)
    shutil.rmtree(net.run_dir, ignore_errors=True)
    return problems


def release(net: NodeNet, tree: Path) -> list[str]:
    """Undo everything the node did on the host; return what could not be undone."""
    with _host_lock():
        problems = _undo_node(net, tree)
        reg = _load_registry()
        holders = {k: v for k, v in _holders(reg).items() if k != net.slot}
        if holders:
            reg["holders"] = {str(k): v for k, v in holders.items()}
            REGISTRY.write_text(json.dumps(reg, indent=2))
        else:  # the last node on this host: put the host back as it was
            problems += _restore_host(reg)
            # The lock file goes too (nothing of ours stays in /run); a claimer blocked on
            # the old file then holds a lock nobody else sees, for one claim at worst.
            shutil.rmtree(RUN_DIR, ignore_errors=True)
    return problems


def _restore_host(reg: dict[str, object]) -> list[str]:
    problems = []
    saved = reg.get("sysctls")
    for key, value in (saved if isinstance(saved, dict) else {}).items():
        try:
            (PROC_SYS / key).write_text(f"{value}\n")
        except OSError as exc:
            problems.append(f"sysctl {key}={value}: {exc}")
    created = reg.get("created")
    for path in created if isinstance(created, list) else []:
        shutil.rmtree(path, ignore_errors=True)
    return problems


def _remove_cni_cache(net: NodeNet) -> None:
    results = Path("/var/lib/cni/results")
    for entry in results.glob(f"{net.network_name}-*") if results.is_dir() else []:
        entry.unlink(missing_ok=True)


def hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers, ``systemd``, ``unified``)."""
    seen, out = set(), []
    for entry in sorted(CGROUP_ROOT.iterdir()) if CGROUP_ROOT.is_dir() else []:
        real = entry.resolve()
        if real not in seen and entry.is_dir():
            seen.add(real)
            out.append(real)
    return out


def _make_cgroup_roots(net: NodeNet) -> None:
    for h in hierarchies():
        root = h / net.cgroup_root.lstrip("/")
        root.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):  # a new cpuset is empty: inherit
            if (h / knob).exists() and not (root / knob).read_text().strip():
                (root / knob).write_text((h / knob).read_text())


def _cgroup_pids(net: NodeNet) -> set[int]:
    pids: set[int] = set()
    for h in hierarchies():
        root = h / net.cgroup_root.lstrip("/")
        for procs in root.rglob("cgroup.procs") if root.is_dir() else []:
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(p) for p in procs.read_text().split()}
    return pids


def _node_daemon_pids(tree: Path, names: tuple[str, ...] = NODE_DAEMONS) -> set[int]:
    """Node daemons (containerd, its shims, kubelet, runc) with ``tree`` in their argv."""
    pids = set()
    marker = str(tree).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            exe = os.readlink(entry / "exe")
            if Path(exe).name.startswith(names) and marker in (entry / "cmdline").read_bytes():
                pids.add(int(entry.name))
    return pids


def kill_node_processes(net: NodeNet, tree: Path, timeout: float = 15.0) -> None:
    """SIGKILL every container process (by cgroup) and shim (by argv), by PID."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _cgroup_pids(net) | _node_daemon_pids(tree) | _node_daemon_pids(net.run_dir)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _mounts_under(tree: Path) -> list[str]:
    out = []
    prefix = str(tree.resolve()).rstrip("/") + "/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == prefix.rstrip("/"):
            out.append(point)
    return sorted(set(out), key=lambda p: p.count("/"), reverse=True)


def unmount_under(tree: Path) -> list[str]:
    """Unmount every mount at or below ``tree``, deepest first (lazily if busy)."""
    for point in _mounts_under(tree):
        done = subprocess.run(["umount", point], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return [f"still mounted: {p}" for p in _mounts_under(tree)]


def _remove_links(net: NodeNet) -> list[str]:
    if _ip("link", "show", net.bridge, check=False).returncode != 0:
        return []
    ports = json.loads(_ip("-j", "link", "show", "master", net.bridge).stdout or "[]")
    for port in ports:
        _ip("link", "del", port["ifname"], check=False)
    _ip("link", "del", net.bridge, check=False)
    left = _ip("link", "show", net.bridge, check=False).returncode == 0
    return [f"bridge {net.bridge} still present"] if left else []


def _remove_cgroups(net: NodeNet, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    left: list[Path] = []
    while time.monotonic() < deadline:
        left = []
        for h in hierarchies():
            root = h / net.cgroup_root.lstrip("/")
            if not root.is_dir():
                continue
            dirs = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            for d in [*dirs, root]:
                with contextlib.suppress(OSError):
                    d.rmdir()
            if root.exists():
                left.append(root)
        if not left:
            return []
        time.sleep(0.1)
    return [f"cgroup {p} still present" for p in left]
