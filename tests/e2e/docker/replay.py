"""Replay a Dockerfile's build stages on this machine, under a directory standing in for ``/``.

No Docker engine runs here. The RUN lines are executed as written (``sh -ec``)
after their absolute image paths are moved under ``root``; COPY copies from
the build context (honouring the stage's WORKDIR) or, with ``--from``, within
``root``; ENV and WORKDIR apply as in Docker. ``python`` is this machine's base
interpreter (3.11, as in the image). One deviation: pip may use its HTTP
cache, so repeated runs do not download every wheel again.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tests.integration.docker.dockerfile import REPO_ROOT, Dockerfile, Stage

IMAGE_DIRS = ("opt", "src", "wheels", "tmp")
_ABS = re.compile(r"(?<![\w./$-])/(" + "|".join(IMAGE_DIRS) + r")(?=/|\b)")


class ReplayError(AssertionError):
    """A replayed step failed; the message carries its output."""


def _env(root: Path) -> dict[str, str]:
    shim = root / ".shim"
    shim.mkdir(parents=True, exist_ok=True)
    base = Path(getattr(sys, "_base_executable", sys.executable))
    for name in ("python", "python3"):
        link = shim / name
        if not link.exists():
            link.symlink_to(base)
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR")}
    proxies = {k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}
    return {**keep, **proxies, "PATH": f"{shim}:/usr/bin:/bin"}


def _mapped(root: Path, path: str, cwd: str) -> Path:
    full = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
    return root / full.lstrip("/")


def _copy(src: Path, dst: Path, *, into_dir: bool) -> None:
    target = dst / src.name if into_dir and not src.is_dir() else dst
    if src.resolve() == target.resolve():
        return
    if src.is_dir():
        shutil.copytree(
            src, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _do_copy(root: Path, args: str, cwd: str) -> None:
    parts = args.split()
    source_root = REPO_ROOT
    if parts[0].startswith("--from="):
        source_root, parts = root, parts[1:]
    *srcs, dst = parts
    into_dir = dst.endswith("/")
    target = _mapped(root, dst, cwd)
    for src in srcs:
        origin = source_root / src.lstrip("/") if source_root is root else source_root / src
        _copy(origin, target, into_dir=into_dir)


def _run(root: Path, cmd: str, cwd: str, env: dict[str, str]) -> None:
    script = _ABS.sub(lambda m: f"{root}/{m.group(1)}", cmd)
    done = subprocess.run(
        ["/bin/sh", "-ec", script],
        cwd=_mapped(root, cwd, "/"),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if done.returncode != 0:
        raise ReplayError(f"RUN {cmd}\n-> exit {done.returncode}\n{done.stdout}\n{done.stderr}")


def replay_stage(stage: Stage, root: Path) -> None:
    env, cwd = _env(root), "/"
    for ins in stage.instructions:
        if ins.op == "ENV":
            for pair in shlex.split(ins.args):
                key, _, value = pair.partition("=")
                env[key] = value.replace("$PATH", env["PATH"])
            env.pop("PIP_NO_CACHE_DIR", None)  # the one deviation (see the module docstring)
        elif ins.op == "WORKDIR":
            cwd = ins.args
            _mapped(root, cwd, "/").mkdir(parents=True, exist_ok=True)
        elif ins.op == "COPY":
            _do_copy(root, ins.args, cwd)
        elif ins.op == "RUN":
            _run(root, ins.args, cwd, env)


def replay(df: Dockerfile, root: Path) -> Path:
    """Run every stage; return the runtime's venv (``/opt/venv`` under ``root``)."""
    for stage in df.stages:
        replay_stage(stage, root)
    return root / "opt" / "venv"
