"""Issue 44 item 1, before and after: how typed each layer is. Run through
``python benchmarks/layers.py --types`` (or this file directly).

Usage: python benchmarks/layer_types.py [--before REV] [--after REV|.] [--no-mypy]

Per layer of ``laya_tui/`` (the layers of docs/architecture.md; ``cluster`` where a tree
has it):

- ``[str, Any]`` lines: source lines with a ``[str, Any]`` mapping (``dict``, ``Mapping``,
  ``MutableMapping`` or an alias's definition alike), as ``grep -E "\\[str, *Any\\]"``
  counts them; ``dict[str, Any]`` lines separately.
- ``Any``: occurrences of the word ``Any`` (``grep -ow``).
- mypy errors under the strict flags (:data:`STRICT`, the per-module overrides of
  pyproject.toml's ``[tool.mypy]``) applied to every module, by the layer of the file
  they are reported in, with the tree's own base settings; and the errors of the tree's
  own configuration (what ``scripts/test.sh`` runs), which names the layers it holds to
  the strict flags.

The before tree is checked out with ``git worktree add`` into a temporary folder (removed
after); ``--after .`` (the default) measures this checkout as it is on disk. Each mypy run
has its own cache folder, so the two trees never share results.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "3fa4163"  # issue 44 filed: no strict flags, the protocol untyped
#: The strict flags (``mypy --strict`` less the global-only ones), as pyproject names them.
STRICT = ("disallow_untyped_defs", "disallow_incomplete_defs", "disallow_any_generics",
          "disallow_untyped_calls", "disallow_untyped_decorators", "disallow_subclassing_any",
          "warn_return_any", "no_implicit_reexport", "strict_equality", "extra_checks")
LAYERS = ("core", "report", "worker", "cli", "watch", "tui", "families", "cluster", "top")
STR_ANY = re.compile(r"\[str, *Any\]")
DICT_STR_ANY = re.compile(r"dict\[str, *Any\]")
ANY = re.compile(r"\bAny\b")
ERROR = re.compile(r"^(laya_tui/[^:]+\.py):\d+: error:")


def layer_of(rel: str) -> str:
    """``laya_tui/core/x.py`` -> ``core``; a top-level module -> ``top``."""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else "top"


def counts(root: Path) -> dict[str, Counter[str]]:
    """Per layer: ``str_any`` and ``dict_str_any`` lines, ``any`` words, ``modules``."""
    out: dict[str, Counter[str]] = {}
    for path in sorted((root / "laya_tui").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        c = out.setdefault(layer_of(rel), Counter())
        c["modules"] += 1
        for line in path.read_text(encoding="utf-8").splitlines():
            c["str_any"] += bool(STR_ANY.search(line))
            c["dict_str_any"] += bool(DICT_STR_ANY.search(line))
            c["any"] += len(ANY.findall(line))
    return out


def base_settings(root: Path) -> dict[str, object]:
    """The tree's ``[tool.mypy]`` settings, without ``files`` and its overrides."""
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mypy"]
    return {k: v for k, v in conf.items() if k not in ("files", "overrides")}


def strict_layers(root: Path) -> list[str]:
    """The layers the tree's own configuration holds to every strict flag."""
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mypy"]
    held = []
    for o in conf.get("overrides", []):
        mods = o["module"] if isinstance(o["module"], list) else [o["module"]]
        if all(o.get(f) is True for f in STRICT):
            # ``laya_tui.families.tilelang.*`` -> families.tilelang (part of a layer)
            held += [m.removeprefix("laya_tui.").removesuffix(".*") for m in mods
                     if m.startswith("laya_tui.")]
    return sorted(set(held))


def _ini_value(key: str, v: object) -> str:
    """A pyproject value as mypy's ini file spells it (``exclude``: one regex of the list's)."""
    if isinstance(v, list):
        return ("|".join if key == "exclude" else ", ".join)(str(x) for x in v)
    return str(v).lower() if isinstance(v, bool) else str(v)


def mypy_errors(root: Path, cache: Path, strict: bool) -> Counter[str]:
    """Errors per layer of ``mypy laya_tui`` in ``root``: under the strict flags on every
    module (``strict``), else under the tree's own configuration."""
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary"]
    if strict:
        ini = cache.with_suffix(".ini")
        lines = ["[mypy]"] + [f"{k} = {_ini_value(k, v)}"
                             for k, v in base_settings(root).items()]
        lines += ["", "[mypy-laya_tui.*]"] + [f"{f} = true" for f in STRICT]
        ini.write_text("\n".join(lines) + "\n")
        cmd += ["--config-file", str(ini)]
    proc = subprocess.run([*cmd, "laya_tui"], cwd=root, capture_output=True, text=True)
    per: Counter[str] = Counter()
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            per[layer_of(m.group(1))] += 1
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not per):
        raise SystemExit(f"layer_types.py: mypy failed in {root}:\n{proc.stdout}{proc.stderr}")
    return per


@dataclass
class Measured:
    """One tree's figures."""

    counts: dict[str, Counter[str]]
    held: list[str]
    strict: Counter[str] = field(default_factory=Counter)
    own: Counter[str] = field(default_factory=Counter)
    tests: int = 0


def test_errors(root: Path, cache: Path) -> int:
    """mypy errors in ``tests/*.py`` under the tree's own base settings (scripts/test.sh
    checks them too: pyproject's ``files``)."""
    tests = sorted(str(p.relative_to(root)) for p in (root / "tests").glob("*.py"))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache),
                           "--no-error-summary", "--explicit-package-bases", *tests],
                          cwd=root, capture_output=True, text=True)
    return sum(1 for line in proc.stdout.splitlines()
               if re.match(r"^tests/[^:]+\.py:\d+: error:", line))


def measure(root: Path, tmp: Path, label: str, run_mypy: bool) -> Measured:
    out = Measured(counts(root), strict_layers(root))
    if run_mypy:
        out.strict = mypy_errors(root, tmp / f"cache-{label}-strict", True)
        out.own = mypy_errors(root, tmp / f"cache-{label}-own", False)
        out.tests = test_errors(root, tmp / f"cache-{label}-tests")
    return out


def table(before: Measured, after: Measured, run_mypy: bool) -> None:
    def word(m: Measured, key: str) -> Counter[str]:
        return Counter({layer: c[key] for layer, c in m.counts.items()})

    cols = [(word(before, k), word(after, k), what) for k, what in (
        ("str_any", "[str, Any] lines"), ("dict_str_any", "dict[str, Any] lines"),
        ("any", "Any words"))]
    if run_mypy:
        cols += [(before.strict, after.strict, "mypy errors under the strict flags"),
                 (before.own, after.own, "mypy errors under the tree's own pyproject.toml")]
    present = [la for la in LAYERS if la in before.counts or la in after.counts]
    print(f"  {'':<48} {'before':>7} {'after':>7}")
    for vb, va, what in cols:
        print(what + ":")
        for layer in present:
            print(f"  {layer:<48} {vb[layer]:>7} {va[layer]:>7}")
        print(f"  {'total':<48} {sum(vb.values()):>7} {sum(va.values()):>7}")
    if run_mypy:
        print(f"mypy errors in tests/*.py (own base settings): before {before.tests}, "
              f"after {after.tests}")
    print("layers pyproject.toml holds to every strict flag: before "
          f"{', '.join(before.held) or 'none'}; after {', '.join(after.held) or 'none'}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--after", default=".")
    ap.add_argument("--no-mypy", action="store_true", help="counts only (seconds, not minutes)")
    opts = ap.parse_args(argv)
    run_mypy = not opts.no_mypy
    with tempfile.TemporaryDirectory(prefix="laya-layer-types-") as name:
        tmp = Path(name)
        trees = []
        for label, rev in (("before", opts.before), ("after", opts.after)):
            if rev == ".":
                trees.append((label, REPO, "working tree"))
                continue
            dest = tmp / label
            subprocess.run(["git", "worktree", "add", "--detach", "-f", str(dest), rev],
                           cwd=REPO, check=True, capture_output=True)
            sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True,
                                 capture_output=True, text=True).stdout.strip()
            trees.append((label, dest, sha))
        try:
            results = {label: measure(root, tmp, label, run_mypy) for label, root, _ in trees}
        finally:
            for _label, root, _ in trees:
                if root != REPO:
                    subprocess.run(["git", "worktree", "remove", "--force", str(root)],
                                   cwd=REPO, capture_output=True)
        print(f"laya_tui typing: before = {trees[0][2]}, after = {trees[1][2]}; strict flags: "
              + ", ".join(STRICT))
        table(results["before"], results["after"], run_mypy)


if __name__ == "__main__":
    main()
