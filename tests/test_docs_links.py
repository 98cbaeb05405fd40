"""The README, CONTRIBUTING.md and docs/ link to each other by relative path and heading
anchor (issue 44 moved the README's sections into docs/): every such link must resolve."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def broken(page: Path) -> list[str]:
    bad = []
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.name}: {target} (no file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{page.name}: {target} (no heading)")
    return bad


def test_every_relative_link_resolves():
    assert [b for page in PAGES for b in broken(page)] == []


def test_the_readme_fits_and_links_the_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert readme.startswith("# laya-tui\n\n```bash\nbash scripts/run.sh ")
    for page in ("docs/guide.md", "docs/install.md", "CONTRIBUTING.md", "docs/dashboard.svg"):
        assert f"]({page}" in readme


def test_the_link_check_can_fail(tmp_path: Path):
    (tmp_path / "a.md").write_text("# Top\n\n[ok](#top) [gone](b.md) [nohead](a.md#nope)\n")
    assert broken(tmp_path / "a.md") == ["a.md: b.md (no file)", "a.md: a.md#nope (no heading)"]
