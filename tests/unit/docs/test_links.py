"""Every relative link in README.md and docs/ resolves: the file exists inside the
repository, and an ``#anchor`` names a heading of the target, slugged as GitHub does.

Links inside fenced code blocks and inline code are not links; ``http(s):`` and other
schemes are left alone (nothing here reaches the network)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_LINK = re.compile(r"\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans removed."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines():
        marker = line.lstrip()[:3]
        if marker in ("```", "~~~"):
            fence = "" if fence == marker else (fence or marker)
            continue
        if not fence:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose(text):
        m = _HEADING.match(line)
        if m is None:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def _anchors_of(doc: Path) -> set[str]:
    return anchors(doc.read_text(encoding="utf-8"))


def broken_links(doc: Path, root: Path) -> list[str]:
    """``<target>: <why>`` for each relative link of ``doc`` that does not resolve."""
    problems: list[str] = []
    for line in _prose(doc.read_text(encoding="utf-8")):
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if _SCHEME.match(target):
                continue
            name, _, anchor = target.partition("#")
            dest = (doc.parent / unquote(name)).resolve() if name else doc
            if not dest.is_relative_to(root.resolve()):
                problems.append(f"{target}: leaves the repository")
            elif not dest.exists():
                problems.append(f"{target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors_of(dest):
                problems.append(f"{target}: no heading with that anchor")
    return problems


def test_the_documents_are_found() -> None:
    names = {d.relative_to(ROOT).as_posix() for d in DOCS}

    assert {"README.md", "docs/user-guide.md", "docs/operations.md", "docs/design.md"} <= names
    assert {"docs/development.md", "docs/benchmarks.md", "docs/iam/README.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc: Path) -> None:
    assert broken_links(doc, ROOT) == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        pytest.param("Why: N nodes or 0", "why-n-nodes-or-0", id="colon"),
        pytest.param(
            "Webhook certificates (`webhook.certMode`)",
            "webhook-certificates-webhookcertmode",
            id="code-and-parens",
        ),
        pytest.param("2026-11-30: the denial path", "2026-11-30-the-denial-path", id="date"),
        pytest.param("Why is my Job pending?", "why-is-my-job-pending", id="question"),
        pytest.param("[The README](../README.md) links", "the-readme-links", id="link-text"),
    ],
)
def test_slugs_follow_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_the_checker_sees_what_is_broken(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Twice\n\n## Twice\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n"
        "[ok](other.md#twice-1) [ok](#doc) [web](https://example.com/x) `[code](gone.md)`\n"
        "[gone](gone.md) [anchor](other.md#nowhere) [out](../outside.md) [self](#missing)\n"
        "```\n[fenced](gone.md)\n```\n",
        encoding="utf-8",
    )

    assert broken_links(doc, tmp_path) == [
        "gone.md: no such file",
        "other.md#nowhere: no heading with that anchor",
        "../outside.md: leaves the repository",
        "#missing: no heading with that anchor",
    ]
