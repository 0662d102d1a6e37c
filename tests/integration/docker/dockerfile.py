"""A small Dockerfile reader: stages, instructions, ARG defaults. Enough for our two files.

Used by the lint tests and by the replay test, which runs the same RUN lines
in a clean venv (no Docker engine here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("controller", "webhook")
ENTRYPOINTS = {"controller": "atomic-gang-provisioner", "webhook": "atomic-gang-webhook"}


@dataclass(frozen=True)
class Instruction:
    op: str  # upper case: RUN, COPY, ...
    args: str


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [i.args for i in self.instructions if i.op == op]


@dataclass
class Dockerfile:
    args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        (found,) = [s for s in self.stages if s.name == name]
        return found


def _logical_lines(text: str) -> list[str]:
    lines, buf = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # comment inside a continued instruction
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        lines.append((buf + line).strip())
        buf = ""
    return lines


def parse(path: Path) -> Dockerfile:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in _logical_lines(path.read_text(encoding="utf-8")):
        op, _, rest = line.partition(" ")
        op, rest = op.upper(), re.sub(r"\s+", " ", rest.strip())
        if op == "FROM":
            m = re.fullmatch(r"(\S+)(?: AS (\S+))?", rest, flags=re.IGNORECASE)
            assert m, line
            stages.append(Stage(base=m.group(1), name=m.group(2) or str(len(stages))))
        elif op == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        else:
            assert stages, f"{op} before FROM"
            stages[-1].instructions.append(Instruction(op, rest))
    return Dockerfile(args, stages)


def dockerfile(service: str) -> Dockerfile:
    return parse(REPO_ROOT / f"Dockerfile.{service}")
