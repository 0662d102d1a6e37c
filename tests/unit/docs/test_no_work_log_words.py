"""The product speaks of itself only: docs, comments and docstrings cite a figure by the
benchmark section and the commit it was measured at, never by a work log's numbered or
relative sittings (the forms ``WORK_LOG`` matches; the samples below spell them with a
placeholder, so that this file holds none of them either).

Scanned: ``README.md``, ``docs/*.md`` and every ``.py`` and ``.sh`` file under
``services/``, ``shared/``, ``hack/``, ``bench/`` and ``tests/`` (virtualenvs and
``__pycache__`` left out). A match may wrap across a line break; it is reported at the
line it starts on. "Session" in its other senses (a boto3 ``Session``, pytest's
``scope="session"``, an HTTP session) does not match."""

from __future__ import annotations

import re
from pathlib import Path

from atomic_gang_devstack.bins import REPO_ROOT

WORK_LOG = re.compile(
    r"\b(sessions?\s+\d+|(last|this|previous|earlier|next)\s+session|this\s+turn)\b",
    re.IGNORECASE,
)
WORD, TURN = "session", "turn"
CODE_DIRS = ("services", "shared", "hack", "bench", "tests")
CODE_SUFFIXES = (".py", ".sh")
SKIPPED_DIRS = frozenset({".venv", "venv", "__pycache__", "node_modules"})


def scanned_files(root: Path) -> list[Path]:
    """README.md, docs/*.md and the .py/.sh files of the code directories, this file aside."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for top in CODE_DIRS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root)
            if SKIPPED_DIRS.intersection(rel.parts) or path.suffix not in CODE_SUFFIXES:
                continue
            if path.is_file() and path.resolve() != Path(__file__).resolve():
                files.append(path)
    return [f for f in files if f.is_file()]


def work_log_words(path: Path, root: Path) -> list[str]:
    """``<file>:<line>: <match>`` for each work-log phrase in ``path``."""
    text = path.read_text(encoding="utf-8", errors="replace")
    rel = path.relative_to(root).as_posix()
    return [
        f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {' '.join(m.group(0).split())}"
        for m in WORK_LOG.finditer(text)
    ]


def test_the_scan_covers_docs_and_code() -> None:
    names = {f.relative_to(REPO_ROOT).as_posix() for f in scanned_files(REPO_ROOT)}

    assert {"README.md", "docs/benchmarks.md", "docs/design.md", "bench/scale.py"} <= names
    assert "tests/unit/docs/test_no_work_log_words.py" not in names
    assert not any("__pycache__" in n or ".venv" in n for n in names)


def test_no_work_log_words() -> None:
    found = [hit for f in scanned_files(REPO_ROOT) for hit in work_log_words(f, REPO_ROOT)]

    assert found == [], "cite the benchmark section and the commit instead:\n" + "\n".join(found)


def test_the_pattern_catches_work_log_uses_only(tmp_path: Path) -> None:
    sample = (
        "Measured in <S> 16 at abc1234.\n"
        "As last <S> showed, and this\n<S> too; in this <T>.\n"
        'boto3.<S>.Session(), scope="<S>", pytest.Session, an HTTP <S>.\n'
        "<Cap>s 16-20 as well.\n"
    )
    doc = tmp_path / "doc.md"
    doc.write_text(
        sample.replace("<S>", WORD).replace("<Cap>", WORD.capitalize()).replace("<T>", TURN),
        encoding="utf-8",
    )

    assert work_log_words(doc, tmp_path) == [
        f"doc.md:1: {WORD} 16",
        f"doc.md:2: last {WORD}",
        f"doc.md:2: this {WORD}",
        f"doc.md:3: this {TURN}",
        f"doc.md:5: {WORD.capitalize()}s 16",
    ]
