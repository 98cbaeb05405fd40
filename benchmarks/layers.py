"""The layers of laya_tui as they are: lines of code, the import graph between layers, its
cycles and back-edges, and the start-up time of ``--help`` and ``--list``.

Usage: python benchmarks/layers.py [--runs N] [--no-timing]

Layers (docs/architecture.md, 'Layers and import rules'): ``core`` (probe API, signals,
runner, worker, cache, report, gates, baseline, CI outputs), ``front ends`` (cli, config,
headless, watch, the dashboard in ``tui/``) and ``families`` (worker-side code that may
import torch & co). Imports are read from the source (``ast``), each classed as ``top``
(runs at import time), ``lazy`` (inside a function) or ``typing`` (``TYPE_CHECKING`` only).
A back-edge is a runtime import from core up into a front end or a family, or between
front ends and families. Timings: median of N runs of the real CLI in fresh interpreters.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "laya_tui"

#: Layer of each module: the first matching prefix wins (module names without "laya_tui.").
LAYER_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tui", "front ends"),
    ("cli", "front ends"),
    ("config", "front ends"),
    ("headless", "front ends"),
    ("watch", "front ends"),  # watch and watch_headless
    ("app_main", "front ends"),
    ("regions", "families"),
    ("lowering", "families"),
    ("aoti", "families"),  # aoti/ and aoti_load
    ("decision_model", "families"),
    ("mlx_encoder", "families"),
    ("presets", "families"),
    ("tolerance", "families"),
    ("numeric", "families"),
    ("", "core"),
)
LAYERS = ("core", "front ends", "families")
#: Allowed runtime directions: front ends and families build on core, never on each other.
ALLOWED = {("front ends", "core"), ("families", "core")}
#: Sub-groups printed under a layer's line count.
GROUPS = {
    "core": {"probe API": ("__init__", "api"),
             "run core": ("signals", "events", "errors", "runner", "worker", "deps", "loader",
                          "cache", "versions", "logtext", "rbln_status"),
             "report": ("report", "gates", "baseline", "junit", "markdown")},
    "front ends": {"cli": ("cli", "config", "app_main"), "headless": ("headless",),
                   "watch": ("watch", "watch_headless"), "tui": ("tui",)},
}


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def short(name: str) -> str:
    return name.removeprefix("laya_tui").removeprefix(".") or "__init__"


def layer_of(name: str) -> str:
    s = short(name)
    for prefix, layer in LAYER_PREFIXES:
        if s == prefix or s.startswith(prefix + ".") or s.startswith(prefix + "_") \
                or prefix == "":
            return layer
    raise AssertionError(name)


def code_lines(path: Path) -> int:
    """Non-blank lines that are not only a comment."""
    return sum(1 for ln in path.read_text().splitlines()
               if ln.strip() and not ln.strip().startswith("#"))


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(target module, kind, names)`` for every laya_tui import in ``path``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str, tuple[str, ...]]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            k = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                k = "lazy" if kind == "top" else kind
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.body:
                    visit_one(sub, "typing")
                for sub in child.orelse:
                    visit_one(sub, kind)
                continue
            visit_one(child, k)

    def visit_one(child: ast.AST, kind: str) -> None:
        if isinstance(child, ast.Import):
            for alias in child.names:
                if alias.name.split(".")[0] == "laya_tui":
                    found.append((_module(alias.name), kind, ()))
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                parts = package.split(".")
                up = parts[:len(parts) - child.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "laya_tui":
                return
            plain = []
            for alias in child.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    found.append((sub, kind, ()))
                else:
                    plain.append(alias.name)
            if plain:
                found.append((_module(base), kind, tuple(plain)))
        visit(child, kind)

    def _module(dotted: str) -> str:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted

    visit(tree, "top")
    return [f for f in found if f[0] and f[0] != name]


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def timed(args: list[str], runs: int) -> float:
    """Median wall seconds of ``python -m laya_tui ARGS`` in a fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "laya_tui", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"laya-tui {' '.join(args)} exited {proc.returncode}: "
                             f"{proc.stderr.strip()[:300]}")
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-timing", action="store_true")
    opts = ap.parse_args()
    mods = modules()
    known = set(mods)

    # -- lines of code --------------------------------------------------------------------
    print("lines of code (non-blank, non-comment) per layer:")
    total = 0
    for layer in LAYERS:
        names = [m for m in mods if layer_of(m) == layer]
        n = sum(code_lines(mods[m]) for m in names)
        total += n
        print(f"  {layer:<11} {n:6d} in {len(names):3d} modules")
        for group, prefixes in GROUPS.get(layer, {}).items():
            g = [m for m in names if short(m).split(".")[0] in prefixes]
            print(f"    {group:<11} {sum(code_lines(mods[m]) for m in g):6d} in {len(g):3d}")
    print(f"  {'total':<11} {total:6d} in {len(mods):3d} modules")

    # -- import graph -----------------------------------------------------------------------
    edges = {m: imports(m, p, known) for m, p in mods.items()}
    layer_edges: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    back: list[str] = []
    for src, targets in edges.items():
        for dst, kind, names in targets:
            a, b = layer_of(src), layer_of(dst)
            if a != b:
                layer_edges[(a, b)][kind] += 1
                if kind != "typing" and (a, b) not in ALLOWED:
                    what = f" ({', '.join(names)})" if names else ""
                    back.append(f"{short(src)} -> {short(dst)}{what} [{a} -> {b}, {kind}]")
    print("\nimports between layers (count of import statements by kind):")
    for (a, b), kinds in sorted(layer_edges.items()):
        flag = "" if (a, b) in ALLOWED else "   <- back-edge"
        print(f"  {a:>10} -> {b:<10} " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
              + flag)
    for label, kinds in (("top-level imports", {"top"}), ("runtime imports", {"top", "lazy"})):
        g = {la: {lb for (x, lb), ks in layer_edges.items() if x == la and set(ks) & kinds}
             for la in LAYERS}
        cyc = sccs(g)
        print(f"cycle between layers ({label}): "
              + ("; ".join("{" + ", ".join(c) + "} reach each other" for c in cyc)
                 if cyc else "none"))
    print("back-edges (runtime imports against the layer rule):")
    for line in sorted(back):
        print("  " + line)
    print("named in issue 18:")
    for src, dst, name in (("laya_tui.report.gates", "laya_tui.cli.main", "check_output_path"),
                           ("laya_tui.cli.headless", "laya_tui.cli.watch_headless", None)):
        hit = [k for d, k, names in edges.get(src, []) if d == dst and (name is None or
                                                                         name in names)]
        print(f"  {short(src)} -> {short(dst)}" + (f" ({name})" if name else "") + ": "
              + (", ".join(hit) if hit else "gone"))

    # module cycles
    named = {("laya_tui.report.gates", "laya_tui.cli.main"),
             ("laya_tui.cli.headless", "laya_tui.cli.watch_headless")}
    for label, kinds, drop in (
            ("top-level imports only", {"top"}, set()),
            ("runtime (top + lazy)", {"top", "lazy"}, set()),
            ("runtime, without the two named back-edges", {"top", "lazy"}, named)):
        g = {m: {d for d, k, _ in edges[m] if k in kinds and (m, d) not in drop} for m in mods}
        comps = sccs(g)
        sizes = ", ".join(str(len(c)) for c in comps) or "none"
        print(f"module import cycles, {label}: {len(comps)} (sizes: {sizes})")
        for c in comps:
            print("  " + " ".join(short(m) for m in c))

    # -- start-up -----------------------------------------------------------------------------
    if opts.no_timing:
        return
    print(f"\nstart-up, median of {opts.runs} fresh runs on this machine:")
    print(f"  laya-tui --help: {timed(['--help'], opts.runs):.3f} s")
    print(f"  laya-tui --list: {timed(['--list', '--jobs', '1'], opts.runs):.3f} s "
          "(this repo's probes: spawns one discovery worker)")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    print(f"  (a bare python -c pass: {time.perf_counter() - t0:.3f} s)")


if __name__ == "__main__":
    main()
