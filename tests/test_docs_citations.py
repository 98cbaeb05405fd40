"""Code cites docs/architecture.md by section title; every cited section must exist, and
nothing cites the old "DESIGN §N" (a document outside the repository)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


# -- paths and names the doc and the README point at ---------------------------------------
PACKAGE = REPO / "laya_tui"
LAYER_DIRS = ("core", "report", "watch", "worker", "families", "cli", "tui")
#: A file (known suffix) or a folder (trailing ``/``) named in backticks.
PATH = re.compile(r"^\w[\w.-]*(?:/[\w.-]+)*/?$")
SUFFIXES = (".py", ".json", ".md", ".toml", ".tcss", ".css", ".js")
#: A dotted name in the package: ``laya_tui.x.y`` or ``<layer or api>.x.y`` (a trailing
#: call, ``f()``, is dropped).
DOTTED = re.compile(r"^(?:laya_tui|api|" + "|".join(LAYER_DIRS) + r")(?:\.[A-Za-z_]\w*)+$")


def backticked(text: str) -> list[str]:
    """Inline code spans (they may wrap across lines; fenced blocks are left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")
    return [re.sub(r"\(.*\)$", "", t.strip()) for t in re.findall(r"`([^`]+)`", text)]


def path_exists(token: str) -> bool:
    """Repo-relative or ``laya_tui``-relative; a name with a ``/`` may also sit under a
    layer folder (``aoti/load.py`` is ``laya_tui/families/aoti/load.py``), a bare file
    name may not (``runner.py`` is stale, ``core/runner.py`` is not)."""
    bases = [REPO, PACKAGE]
    if "/" in token:
        bases += [PACKAGE / d for d in LAYER_DIRS]
    return any((b / token).exists() for b in bases)


def defined_names(path: Path) -> set[str]:
    """Functions, classes, assigned names and imported names anywhere in ``path``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def dotted_resolves(token: str) -> bool:
    """The longest module prefix exists, and the first name after it is defined there."""
    parts = token.split(".")
    if parts[0] != "laya_tui":
        parts.insert(0, "laya_tui")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = parts[cut:]
            return not rest or rest[0] in defined_names(module)
    return False


def stale(text: str, *, paths: bool) -> list[str]:
    bad = []
    for token in backticked(text):
        if DOTTED.match(token):
            if not dotted_resolves(token):
                bad.append(token)
        elif paths and PATH.match(token) and token.endswith((*SUFFIXES, "/")):
            if not path_exists(token):
                bad.append(token)
    return bad


def test_every_path_and_name_in_the_doc_exists():
    """A file moved or renamed leaves the doc naming what is gone ("runner.py", "regions/",
    "report.human_summary"): every backticked path and package name must resolve."""
    assert stale(DOC.read_text(encoding="utf-8"), paths=True) == []


def test_the_readme_names_real_modules():
    """The README's ``laya_tui`` paths and module names (its other paths are the user's)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    bad = stale(text, paths=False)
    bad += [t for t in backticked(text) if t.startswith("laya_tui/") and not path_exists(t)]
    assert bad == []


def test_the_stale_path_check_can_fail():
    text = "`runner.py`, `core/runner.py`, `regions/`, `aoti/load.py`, `report.human_summary`, " \
           "`report.document.human_summary`, `laya_tui.presets`, `laya_tui.regions`"
    assert stale(text, paths=True) == ["runner.py", "regions/", "report.human_summary",
                                       "laya_tui.regions"]


def test_the_doc_lists_the_layer_rule_of_the_test():
    """'Layers and import rules' holds tests/test_layers.py's ALLOWED table, row for row."""
    from tests.test_layers import ALLOWED

    section = DOC.read_text(encoding="utf-8").split("## Layers and import rules", 1)[1]
    table = section.split("| layer | may import |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.strip().splitlines()[1:]:  # after the |---| line
        layer, may = (c.strip() for c in line.strip("|").split("|"))
        rows[layer] = {x.strip() for x in may.split(",")}
    assert rows == ALLOWED
