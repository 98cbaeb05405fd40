"""Issue 18's layout move, before and after in one run: lines of code per layer, import
cycles, layer-rule breaches, and ``--help`` / ``--list`` / first-paint wall and CPU times.

Usage: python benchmarks/layers.py [--before REV] [--after REV|.] [--runs N] [--paints N]
                                   [--no-timing] [--no-paint]
       python benchmarks/layers.py --types [--before REV] [--after REV|.] [--no-mypy]

``--types`` prints issue 44's typing figures instead (``benchmarks/layer_types.py``:
``[str, Any]`` and ``Any`` counts and mypy errors under the strict flags, per layer;
before defaults to 3fa4163 there, after to this checkout).

Each revision's tree is exported with ``git archive`` into a temporary folder (``--after .``
measures this checkout as it is on disk). Both trees are measured by the same code:

- **Layers** (docs/architecture.md, 'Layers and import rules'): core, report, watch, worker,
  families, cli, tui, api and ``package`` (``__init__``, ``__main__`` and the
  ``presets``/``tolerance`` aliases). A layered tree's modules belong to their folder; the
  flat modules of the old layout are mapped to the layer their code moved to (``FLAT``),
  so the comparison is like for like. Three old modules were split by the move
  (``SPLIT``); each counts where most of it went.
- **Lines of code**: non-blank lines that are not only a comment.
- **Import cycles**: ``laya_tui`` imports read from the source (``ast``), classed as
  top-level (run at import time), function-level, or ``TYPE_CHECKING``-only (never run,
  left out). Strongly connected components of the module graph, for top-level imports and
  for every import that runs (top-level and function-level).
- **Layer rule**: imports (of any kind, as ``tests/test_layers.py`` reads them) from one
  layer into a layer its ``ALLOWED`` row does not name.
- **Times**: wall and CPU seconds (CPU is steadier on a loaded machine), median of N
  runs, each in a fresh interpreter with ``PYTHONPATH`` at that tree and cwd there, before
  and after interleaved (alternating which goes first), after one discarded warm-up each
  and with both trees' bytecode compiled. CPU is the process's and its waited-for
  children's (``RUSAGE_CHILDREN``); for the first paint, the app process's until the frame.
  ``--list`` uses the tree's own ``pyproject.toml`` workspace (``--workspace TREE --jobs 1``:
  one discovery worker).
  First paint is ``bench_tui.first_paint`` (``laya-tui`` on a 160x45 pty on the demo
  workspace, exec to first frame), with a bare two-widget Textual app as the yardstick.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import inspect
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

from tests.test_layers import ALLOWED  # noqa: E402 - the rule the suite enforces

BEFORE = "622e28f"  # the flat layout, the commit before "layers: ..."
LAYERS = ("core", "report", "watch", "worker", "families", "cli", "tui", "api", "package")
#: Folders of the layered package; a module inside one belongs to that layer.
LAYER_DIRS = {"core", "report", "watch", "worker", "families", "cli", "tui"}
#: Top-level modules of the layered package.
TOP = {"__init__": "package", "__main__": "package", "api": "api", "presets": "package",
       "tolerance": "package"}
#: The flat layout: a module's first name (or its full dotted name) -> the layer it moved to.
FLAT = {
    "__init__": "package", "__main__": "package", "api": "api",
    **dict.fromkeys(("cache", "errors", "events", "files", "jsonfast", "logtext", "runner",
                     "shard", "signals", "trace", "versions", "tui.recorded"), "core"),
    **dict.fromkeys(("report", "baseline", "gates", "junit", "markdown", "html_report",
                     "saved", "diff", "merge"), "report"),
    "watch": "watch",
    **dict.fromkeys(("worker", "loader", "deps"), "worker"),
    **dict.fromkeys(("aoti", "aoti_load", "decision_model", "lowering", "mlx_encoder",
                     "numeric", "presets", "regions", "rbln_status", "tolerance"), "families"),
    **dict.fromkeys(("cli", "config", "app_main", "headless", "watch_headless", "show",
                     "init_cmd", "project"), "cli"),
    **dict.fromkeys(("tui", "hint_screen"), "tui"),
}
#: Old modules the move split, and where their parts went (each is counted in FLAT's layer).
SPLIT = {
    "headless": "core/run.py (discover + run), report/outputs.py (make_report, "
                "write_ci_files), cli/headless.py",
    "diff": "report/diff.py, cli/diff.py",
    "merge": "report/merge.py, cli/merge.py",
}


@dataclass
class Tree:
    """One revision's source, exported to ``root``, and what was measured on it."""

    label: str
    rev: str
    root: Path
    mods: dict[str, Path] = field(default_factory=dict)
    times: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)

    @property
    def layered(self) -> bool:
        return (self.root / "laya_tui" / "core").is_dir()

    def layer_of(self, name: str) -> str:
        s = short(name)
        parts = s.split(".")
        if self.layered:
            if parts[0] in LAYER_DIRS:
                return parts[0]
            where = TOP.get(parts[0])
        else:
            where = FLAT.get(s) or FLAT.get(parts[0])
        if where is None:
            raise SystemExit(f"layers.py: {self.label} ({self.rev}): module {name} has no layer; "
                             f"place it in {'TOP' if self.layered else 'FLAT'}")
        return where


def export(rev: str, dest: Path) -> tuple[Path, str]:
    """``rev``'s tree under ``dest`` (``.``: this checkout in place); (root, short sha)."""
    if rev == ".":
        sha = git("rev-parse", "--short", "HEAD") + "+worktree"
        return REPO, sha
    sha = git("rev-parse", "--short", rev)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", sha],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest, sha


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name -> file."""
    out = {}
    for path in sorted((root / "laya_tui").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        out[".".join(parts)] = path
    return out


def short(name: str) -> str:
    return name.removeprefix("laya_tui").removeprefix(".") or "__init__"


def code_lines(path: Path) -> int:
    """Non-blank lines that are not only a comment."""
    return sum(1 for ln in path.read_text().splitlines()
               if ln.strip() and not ln.strip().startswith("#"))


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, str]]:
    """``(target module, kind)`` for every laya_tui import in ``path``; kind is ``top``,
    ``lazy`` (inside a function) or ``typing`` (``TYPE_CHECKING`` only)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str]] = []

    def resolve(dotted: str) -> str:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted

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
            found.extend((resolve(a.name), kind) for a in child.names
                         if a.name.split(".")[0] == "laya_tui")
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                up = package.split(".")[:len(package.split(".")) - child.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] == "laya_tui":
                for alias in child.names:  # "from pkg import mod" imports pkg.mod
                    sub = f"{base}.{alias.name}"
                    found.append((sub if sub in known else resolve(base), kind))
        visit(child, kind)

    visit(tree, "top")
    return [(t, k) for t, k in found if t and t != name]


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
    return sorted(out, key=len, reverse=True)


@dataclass
class Shape:
    """What the source of one tree says: lines per layer, cycles, layer-rule breaches."""

    loc: dict[str, tuple[int, int]]  # layer -> (lines, modules)
    cycles: dict[str, list[list[str]]]  # "top" / "runtime" -> components
    layer_cycles: dict[str, list[list[str]]]
    breaches: list[str]


def shape(tree: Tree) -> Shape:
    mods = tree.mods = modules(tree.root)
    known = set(mods)
    loc = {layer: (0, 0) for layer in LAYERS}
    for name, path in mods.items():
        n, m = loc[tree.layer_of(name)]
        loc[tree.layer_of(name)] = (n + code_lines(path), m + 1)
    edges = {m: imports(m, p, known) for m, p in mods.items()}
    cycles, layer_cycles = {}, {}
    for label, kinds in (("top", {"top"}), ("runtime", {"top", "lazy"})):
        graph = {m: {t for t, k in edges[m] if k in kinds} for m in mods}
        cycles[label] = sccs(graph)
        lg: dict[str, set[str]] = {la: set() for la in LAYERS}
        for m, targets in graph.items():
            lg[tree.layer_of(m)].update(tree.layer_of(t) for t in targets)
        layer_cycles[label] = sccs({a: bs - {a} for a, bs in lg.items()})
    breaches = sorted({f"{short(m)} ({tree.layer_of(m)}) -> {short(t)} ({tree.layer_of(t)})"
                       for m in mods for t, _ in edges[m]
                       if tree.layer_of(t) not in ALLOWED[tree.layer_of(m)]})
    return Shape(loc, cycles, layer_cycles, breaches)


# -- timings -------------------------------------------------------------------------------
Sample = tuple[float, float]  # (wall seconds, CPU seconds)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_seconds(tree: Tree, args: list[str]) -> Sample:
    """``python -m laya_tui ARGS`` in a fresh interpreter on ``tree``: wall seconds, and the
    CPU seconds of it and every process it waited for (the discovery worker of --list)."""
    env = dict(os.environ, PYTHONPATH=str(tree.root), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    c0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "laya_tui", *args], cwd=tree.root, env=env,
                          capture_output=True, text=True, timeout=300)
    took, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if proc.returncode != 0:
        raise SystemExit(f"layers.py: {tree.label}: laya-tui {' '.join(args)} exited "
                         f"{proc.returncode}: {proc.stderr.strip()[:300]}")
    tree.output[" ".join(args[:1])] = proc.stdout
    return took, cpu


def check_import_root(tree: Tree) -> None:
    """A fresh interpreter with PYTHONPATH at the tree imports that tree's laya_tui."""
    env = dict(os.environ, PYTHONPATH=str(tree.root))
    got = subprocess.run([sys.executable, "-c", "import laya_tui; print(laya_tui.__file__)"],
                         cwd=tree.root, env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    if Path(got).resolve().parent.parent != tree.root.resolve():
        raise SystemExit(f"layers.py: {tree.label} imports laya_tui from {got}, not its tree")


def interleaved(trees: list[Tree], key: str, runs: int,
                measure: Callable[[Tree], Sample]) -> None:
    """``runs`` samples of ``measure`` per tree after one warm-up each, alternating order."""
    for tree in trees:
        measure(tree)  # warm-up: page cache, first-run costs; discarded
    for i in range(runs):
        for tree in (trees if i % 2 == 0 else trees[::-1]):
            tree.times.setdefault(key, []).append(measure(tree))


def first_paint_fn() -> tuple[Callable[..., object] | None, str]:
    """``bench_tui.first_paint`` when it can be pointed at a tree; else why not."""
    try:
        import bench_tui
    except Exception as exc:  # noqa: BLE001 - any failure only skips the paint rows
        return None, f"benchmarks/bench_tui.py does not import: {exc!r}"
    fn = getattr(bench_tui, "first_paint", None)
    if fn is None or "tree" not in inspect.signature(fn).parameters:
        return None, "benchmarks/bench_tui.py has no first_paint(ws, tree=...)"
    return fn, ""


def paint_seconds(fn: Callable[..., object], ws: Path, **kw: object) -> Sample:
    """(seconds to the first frame, CPU seconds of the app until then; NaN if not given)."""
    got = fn(ws, **kw)  # (painted, quit, cpu) today
    if not isinstance(got, tuple):
        return float(got), math.nan  # type: ignore[arg-type]
    return float(got[0]), float(got[2]) if len(got) > 2 else math.nan


# -- output --------------------------------------------------------------------------------
def row(label: str, before: object, after: object, unit: str = "", ratio: str = "") -> str:
    """One line of the table; numbers get an after/before ratio."""

    def fmt(v: object) -> str:
        if isinstance(v, float) and unit:
            return f"{v:.3f}{unit}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        ratio = f"{after / before:.2f}x" if before else ("=" if after == before else "new")
    return f"  {label:<44} {fmt(before):>12} {fmt(after):>12} {ratio:>7}"


def total(loc: dict[str, tuple[int, int]]) -> tuple[int, int]:
    return sum(n for n, _ in loc.values()), sum(m for _, m in loc.values())


def loc_row(label: str, before: tuple[int, int], after: tuple[int, int]) -> str:
    """Lines of code with the module count in brackets, and the ratio of the lines."""
    return row(label, f"{before[0]:,} [{before[1]}]", f"{after[0]:,} [{after[1]}]",
               ratio=f"{after[0] / before[0]:.2f}x" if before[0] else "")


def main() -> None:
    if "--types" in sys.argv[1:]:  # issue 44's typing figures (benchmarks/layer_types.py)
        import layer_types

        layer_types.main([a for a in sys.argv[1:] if a != "--types"])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=BEFORE, help=f"revision before (default {BEFORE})")
    ap.add_argument("--after", default="HEAD", help="revision after (default HEAD; '.' is "
                                                    "this checkout as it is on disk)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each command per tree")
    ap.add_argument("--paints", type=int, default=5, help="first paints per tree")
    ap.add_argument("--no-timing", action="store_true", help="source figures only")
    ap.add_argument("--no-paint", action="store_true", help="skip the first-paint rows")
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="laya-layers-") as tmp:
        trees = []
        for label, rev in (("before", opts.before), ("after", opts.after)):
            root, sha = export(rev, Path(tmp) / label)
            trees.append(Tree(label, sha, root))
        b, a = trees
        sb, sa = shape(b), shape(a)

        print(f"laya_tui before = {b.rev} ({'layered' if b.layered else 'flat'}), after = "
              f"{a.rev} ({'layered' if a.layered else 'flat'}); load {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"  {'':<44} {'before':>12} {'after':>12} {'ratio':>8}")
        print("lines of code (non-blank, non-comment) per layer, modules in brackets:")
        for layer in LAYERS:
            print(loc_row(layer, sb.loc[layer], sa.loc[layer]))
        print(loc_row("total", total(sb.loc), total(sa.loc)))

        for key, what in (("top", "top-level imports"),
                          ("runtime", "every import that runs: top-level + function-level")):
            cb, ca = sb.cycles[key], sa.cycles[key]
            print(f"module import cycles, {what}:")
            print(row("modules in cycles", sum(map(len, cb)), sum(map(len, ca))))
            print(row("cycles / modules in the largest", f"{len(cb)} / {len(cb[0]) if cb else 0}",
                      f"{len(ca)} / {len(ca[0]) if ca else 0}"))
            print(row("layers in a cycle between layers", sum(map(len, sb.layer_cycles[key])),
                      sum(map(len, sa.layer_cycles[key]))))
        print("layer rule:")
        print(row("imports against tests/test_layers.py ALLOWED", len(sb.breaches),
                  len(sa.breaches)))

        timing = not opts.no_timing
        if timing:
            for tree in trees:
                check_import_root(tree)
                compileall.compile_dir(str(tree.root / "laya_tui"), quiet=1)
            interleaved(trees, "--help", opts.runs, lambda t: cli_seconds(t, ["--help"]))
            interleaved(trees, "--list", opts.runs, lambda t: cli_seconds(
                t, ["--list", "--jobs", "1", "--workspace", str(t.root)]))
            paint, why = (None, "--no-paint") if opts.no_paint else first_paint_fn()
            if paint is not None:
                import bench_tui

                ws = Path(tmp) / "ws"
                shutil.copytree(bench_tui.DEMO_WS, ws)
                bare = Tree("bare", "-", REPO)  # the yardstick, interleaved with the two
                interleaved([*trees, bare], "first paint", opts.paints, lambda t: paint_seconds(
                    paint, ws, **({"bare": True} if t is bare else {"tree": t.root})))
            print(f"start-up: median of {opts.runs} fresh interpreters per tree, interleaved:")
            for key, label in (("--help", "laya-tui --help"),
                               ("--list", "laya-tui --list (one discovery worker)"),
                               ("first paint", f"first paint, 160x45 pty ({opts.paints} each)")):
                if key not in a.times:
                    continue
                for i, what, unit in ((0, "wall", " s"), (1, "CPU", " s")):
                    vb = [x[i] for x in b.times[key]]
                    va = [x[i] for x in a.times[key]]
                    print(row(f"{label}, {what}", statistics.median(vb), statistics.median(va),
                              unit) + f"  (max {max(vb):.3f} / {max(va):.3f})")
            if paint is not None:
                bw = statistics.median(x[0] for x in bare.times["first paint"])
                bc = statistics.median(x[1] for x in bare.times["first paint"])
                print(f"  (a bare two-widget Textual app on the same pty, interleaved: first "
                      f"frame {bw:.3f} s, CPU {bc:.3f} s)")
            else:
                print(f"  first paint not measured: {why}")
            ids = [len(t.output.get("--list", "").split()) for t in trees]
            print(f"  (--list printed {ids[0]} probe ids before, {ids[1]} after)")

        print("largest module cycle, every import that runs:")
        for tree, s in ((b, sb), (a, sa)):
            c = s.cycles["runtime"]
            print(f"  {tree.label}: " + (" ".join(short(m) for m in c[0]) if c else "none"))
        print("layers that reach each other (top-level imports; every import that runs):")
        for tree, s in ((b, sb), (a, sa)):
            print(f"  {tree.label}: " + "; ".join(
                " ".join("{" + ", ".join(c) + "}" for c in s.layer_cycles[k]) or "none"
                for k in ("top", "runtime")))
        print("imports against the layer rule (tests/test_layers.py ALLOWED):")
        for tree, s in ((b, sb), (a, sa)):
            print(f"  {tree.label}: {len(s.breaches)}")
            for line in s.breaches:
                print(f"    {line}")
        print("old modules split by the move (each counted in the layer most of it went to):")
        for old, where in SPLIT.items():
            print(f"  {old}.py ({FLAT[old]}) -> {where}")


if __name__ == "__main__":
    main()
