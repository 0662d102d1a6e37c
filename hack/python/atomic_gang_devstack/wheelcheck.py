"""``make build``'s check of the project wheel: what is in it, and that it installs.

The wheel must hold exactly our four packages (no dev stack, simulator or test
code), declare the three console scripts, and install with pip; each package
then imports from the installed copy, not the source tree, and each script
answers ``--help``. ``python -m atomic_gang_devstack.wheelcheck dist/*.whl``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGES = ("atomic_gang", "atomic_gang_webhook", "atomic_gang_provisioner", "atomic_gang_cli")
SCRIPTS = ("atomic-gang-provisioner", "atomic-gang-webhook", "atomic-gang")


def content_problems(names: list[str]) -> list[str]:
    """What is wrong with a wheel holding these archive member names (pure)."""
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    meta = {t for t in tops if t.endswith(".dist-info")}
    problems = [f"missing package {p}" for p in PACKAGES if f"{p}/__init__.py" not in names]
    problems += [f"unexpected top-level entry {t}" for t in sorted(tops - set(PACKAGES) - meta)]
    problems += [f"unexpected top-level file {n}" for n in names if "/" not in n]
    if len(meta) != 1:
        problems.append(f"expected one .dist-info directory, found {sorted(meta)}")
    problems += [f"{n}: compiled file in the wheel" for n in names if n.endswith(".pyc")]
    return problems


def script_problems(entry_points: str) -> list[str]:
    declared = {
        line.split("=", 1)[0].strip()
        for line in entry_points.splitlines()
        if "=" in line and not line.startswith("[")
    }
    return [f"console script {s} not declared" for s in SCRIPTS if s not in declared]


def check_contents(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        problems = content_problems(names)
        points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        if not points:
            return [*problems, "no entry_points.txt"]
        return problems + script_problems(zf.read(points[0]).decode())


def check_install(wheel: Path) -> list[str]:
    """pip-install the wheel alone into a scratch dir; import and run it from there."""
    with tempfile.TemporaryDirectory(prefix="wheelcheck-") as tmp:
        target = Path(tmp) / "site"
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
        subprocess.run([*pip, "--target", str(target), str(wheel)], check=True)
        # The target comes first on the path: the wheel's copy wins over the source tree
        # (the dependencies come from this environment).
        env = {**os.environ, "PYTHONPATH": str(target)}
        probe = "; ".join(f"import {p}; print({p}.__file__)" for p in PACKAGES)
        # One process per check, all at once: each imports the whole dependency tree.
        procs = {
            "import": _spawn([sys.executable, "-c", probe], env),
            **{s: _spawn([str(target / "bin" / s), "--help"], env) for s in SCRIPTS},
        }
        results = {name: (*p.communicate(), p.returncode) for name, p in procs.items()}
        out, err, code = results.pop("import")
        if code != 0:
            return [f"importing the installed packages failed: {err.strip()}"]
        problems = [
            f"{path} imported from outside the installed wheel"
            for path in out.split()
            if not Path(path).is_relative_to(target)
        ]
        problems += [
            f"{script} --help exited {code}: {err.strip()}"
            for script, (_, err, code) in results.items()
            if code != 0
        ]
        return problems


def _spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="wheelcheck", description=__doc__)
    p.add_argument("wheel", type=Path)
    args = p.parse_args(argv)
    problems = check_contents(args.wheel) or check_install(args.wheel)
    for problem in problems:
        sys.stderr.write(f"wheelcheck: {args.wheel.name}: {problem}\n")
    if problems:
        sys.exit(1)
    print(f"wheelcheck: {args.wheel.name}: {len(PACKAGES)} packages, installs and runs")


if __name__ == "__main__":
    main()
