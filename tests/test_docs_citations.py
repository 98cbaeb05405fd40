"""Code cites docs/architecture.md by section title; every cited section must exist, and
nothing cites the old "DESIGN §N" (a document outside the repository)."""

from __future__ import annotations

import re

from tests._util import REPO

DOC = REPO / "docs" / "architecture.md"
ROOTS = ("laya_tui", "probes", "kernels", "tests", "benchmarks")
CITATION = re.compile(r"docs/architecture\.md,\s*((?:'[^']+'(?:,\s*)?)+)")


def sections() -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#{2,3} (.+)$", DOC.read_text(), re.M)}


def citations() -> list[tuple[str, str]]:
    """``(file, section title)`` for every citation; a comment may wrap across lines."""
    found = []
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            text = re.sub(r"\n\s*(?:#:?\s*)?", " ", path.read_text(encoding="utf-8"))
            for m in CITATION.finditer(text):
                for title in re.findall(r"'([^']+)'", m.group(1)):
                    found.append((str(path.relative_to(REPO)), title))
    return found


def test_every_cited_section_exists():
    cited = citations()
    assert len({f for f, _ in cited}) >= 10  # the core modules cite it
    missing = [(f, t) for f, t in cited if t not in sections()]
    assert missing == []


def test_no_design_section_numbers():
    stale = [str(p.relative_to(REPO)) for root in ROOTS for p in (REPO / root).rglob("*.py")
             if re.search(r"DESIGN\s*§", p.read_text(encoding="utf-8"))
             and p.name != "test_docs_citations.py"]
    assert stale == []
