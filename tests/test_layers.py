"""The layer rule of docs/architecture.md ('Layers and import rules'), checked on the source.

Every module under ``laya_tui`` belongs to exactly one layer; every ``laya_tui`` import in it
(top level or inside a function) must point to a layer it may use. A module that moves out
of the known layers, or a new top-level module, fails the test until it is placed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "laya_tui"

#: layer -> the layers its modules may import (always including itself).
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "report": {"core", "report"},
    "watch": {"core", "report", "watch"},
    "tui": {"core", "report", "watch", "tui", "cluster"},
    "cli": {"core", "report", "watch", "tui", "cli", "cluster"},
    # --cluster: the runner on Ray nodes (Ray allowed, nothing heavy); the front ends pick it
    "cluster": {"core", "cluster"},
    # worker side: the probe API, the worker process and the families never import a front end
    "api": {"core", "api", "families"},
    "worker": {"core", "api", "worker", "families"},
    "families": {"core", "families"},  # the api calls into families, never the reverse
    # laya_tui/__init__, __main__ and the two re-exports (presets, tolerance)
    "package": {"core", "api", "cli", "families"},
}
#: top-level modules of the package and their layer
TOP = {"__init__": "package", "__main__": "package", "api": "api", "presets": "package",
       "tolerance": "package"}


def layer_of(module: str) -> str:
    """The layer of a dotted ``laya_tui`` module name (KeyError when it has none)."""
    parts = module.split(".")
    assert parts[0] == "laya_tui", module
    if len(parts) == 1:
        return "package"
    if parts[1] in ALLOWED and parts[1] not in ("api", "package"):
        return parts[1]
    return TOP[parts[1]]


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        out[".".join(parts)] = path
    return out


def laya_imports(path: Path) -> set[str]:
    """Every ``laya_tui...`` module named by an import anywhere in ``path``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("laya_tui"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("laya_tui"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)  # "from pkg import mod"
    return found


def test_every_module_has_a_layer():
    homeless = []
    for name in modules():
        try:
            layer_of(name)
        except KeyError:
            homeless.append(name)
    assert not homeless, f"modules outside every layer (place them in tests/test_layers.py): " \
                         f"{homeless}"


def test_imports_follow_the_layer_rule():
    known = modules()
    bad = []
    for name, path in known.items():
        mine = layer_of(name)
        for target in laya_imports(path):
            if target not in known:  # "from laya_tui.x import some_function"
                continue
            theirs = layer_of(target)
            if theirs not in ALLOWED[mine]:
                bad.append(f"{name} ({mine}) imports {target} ({theirs})")
    assert not bad, "\n".join(bad)


def test_an_import_of_a_missing_module_is_caught():
    """A renamed module leaves an import no layer knows: the walk names it."""
    known = modules()
    missing = sorted(t for path in known.values() for t in laya_imports(path)
                     if t not in known and t.rsplit(".", 1)[0] not in known)
    assert not missing, missing


def test_the_layer_rule_sees_a_back_edge(tmp_path):
    src = tmp_path / "gates.py"
    src.write_text("def f():\n    from laya_tui.cli.main import check_output_path\n")
    assert "laya_tui.cli.main" in laya_imports(src)
    assert layer_of("laya_tui.cli.main") not in ALLOWED[layer_of("laya_tui.report.gates")]
