"""What the layout promises and import-linter cannot say: API coordinates are declared
once (``atomic_gang.resources``), and no module name repeats within the provisioner."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import atomic_gang
import atomic_gang_provisioner
from atomic_gang.resources import POOLS
from atomic_gang_provisioner.api import GangNodePool
from tests.support.pools import pool

REPO = Path(__file__).resolve().parents[3]
CLIENTS = ("services", "hack/python", "shared", "bench")


def _constructions(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Resource"
    ]


def test_every_client_reads_its_coordinates_from_the_shared_core() -> None:
    declared = Path(atomic_gang.__file__).parent / "resources.py"
    elsewhere = [
        f"{path.relative_to(REPO)}:{line}"
        for root in CLIENTS
        for path in sorted((REPO / root).rglob("*.py"))
        if path != declared
        for line in _constructions(path)
    ]
    assert _constructions(declared)  # they are declared there
    assert elsewhere == []


def test_the_pool_model_names_the_pools_collection() -> None:
    written = pool().to_dict()
    assert (written["apiVersion"], written["kind"]) == (POOLS.api_version, POOLS.kind)
    assert GangNodePool.model_fields["kind"].default == POOLS.kind


def test_no_module_name_repeats_within_the_provisioner() -> None:
    package = Path(atomic_gang_provisioner.__file__).parent
    names = Counter(p.stem for p in package.rglob("*.py") if p.stem != "__init__")
    names.update(p.name for p in package.rglob("*") if p.is_dir() and p.name != "__pycache__")
    assert [name for name, n in names.items() if n > 1] == []
