"""Which kernels a folder holds and which matrix cells they expand into (stdlib only).

Discovery must stay fast and never import TileLang, so files are classified from their
syntax tree (or, for a file that does not parse, from its text, so its cells keep their ids
while it is being edited):

* a **factory module** has a top-level function taking shapes and a ``cpu`` argument
  (``gemm_kernel(N, K, *, cpu=False, dtype=...)``): one cell per target x dtype x
  specialization;
* a **plain TileLang file** defines a ``@tilelang.jit`` function or a ``PrimFunc`` at module
  level (the ``tilelang.tools.compile_only`` convention): one cell per target, labelled
  with the dtype and specialization its source uses, probed with its own shapes;
* anything else (helpers such as ``common.py``, references) expands into nothing.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Any

TARGETS: tuple[str, ...] = ("c", "cuda")
#: dtype name -> the short label used in cell ids and signal details.
DTYPES: dict[str, str] = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
SPECS: tuple[str, ...] = ("gpu", "cpu")
_GPU_MARKERS = ("alloc_fragment", "alloc_shared", "T.Parallel", "Pipelined", "threads=",
                "T.gemm", "use_swizzle")
_SKIP_FILES = {"__init__.py", "setup.py", "conftest.py"}


@dataclass(frozen=True)
class KernelEntry:
    """One kernel found in a folder."""

    name: str  # cell name: the factory name, or the file stem for plain files
    file: str
    kind: str  # "factory" | "file"
    factory: str | None = None
    line: int | None = None  # where the factory (or the kernel object) is defined
    dtype: str | None = None  # plain files: the dtype their source uses
    spec: str | None = None  # plain files: "gpu" or "cpu" by the constructs used
    broken: bool = False  # did not parse (the cells still exist and report the error)


def kernel_dirs(opts: dict[str, Any]) -> list[str]:
    """The kernel folders of a run: ``--kernels`` or ``<workspace>/kernels``."""
    dirs = [d for d in (opts.get("kernels") or []) if d]
    if not dirs:
        ws = opts.get("workspace") or os.getcwd()
        default = os.path.join(ws, "kernels")
        dirs = [default] if os.path.isdir(default) else []
    return [os.path.realpath(d) for d in dirs]


def kernel_files(directory: str) -> list[str]:
    """Top-level ``*.py`` files of a kernel folder (``_private.py`` and ``__init__`` skipped)."""
    if os.path.isfile(directory):
        return [os.path.realpath(directory)] if directory.endswith(".py") else []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.realpath(os.path.join(directory, n)) for n in names
            if n.endswith(".py") and not n.startswith(("_", ".")) and n not in _SKIP_FILES]


def _is_factory(fn: ast.FunctionDef) -> bool:
    """Takes ``cpu`` and shapes (a positional parameter) or is named ``*_kernel``."""
    a = fn.args
    takes_cpu = any(p.arg == "cpu" for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))
    shapes = [p for p in (*a.posonlyargs, *a.args) if p.arg != "cpu"]
    return takes_cpu and (bool(shapes) or fn.name.endswith("_kernel"))


def _decorator_text(fn: ast.FunctionDef, source: str) -> str:
    return " ".join(ast.get_source_segment(source, d) or "" for d in fn.decorator_list)


def _labels(source: str) -> tuple[str, str]:
    """(dtype, spec) a plain file uses: its most frequent 16-bit dtype, if any, else float32
    (fp32 alone is usually the accumulator); GPU constructs or not."""
    counts = {dt: len(re.findall(rf"\b{dt}\b", source)) for dt in DTYPES}  # bfloat16 != float16
    low = [d for d in ("float16", "bfloat16") if counts[d]]
    dtype = max(low, key=lambda d: counts[d]) if low else "float32"
    spec = "gpu" if any(m in source for m in _GPU_MARKERS) else "cpu"
    return dtype, spec


def classify(path: str) -> list[KernelEntry]:
    """The kernels one file defines (empty for helpers)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        return []
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError:
        return _classify_text(path, stem, source)
    factories = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                 and not n.name.startswith("_") and _is_factory(n)]
    if factories:
        return [KernelEntry(name=n.name, file=path, kind="factory", factory=n.name,
                            line=n.lineno) for n in factories]
    if "tilelang" not in source and "prim_func" not in source:
        return []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            deco = _decorator_text(node, source)
            if "jit" in deco or "prim_func" in deco:
                dtype, spec = _labels(source)
                return [KernelEntry(name=stem, file=path, kind="file", line=node.lineno,
                                    dtype=dtype, spec=spec)]
    if "prim_func" in source or "tilelang.jit" in source or "@jit" in source:
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                dtype, spec = _labels(source)
                return [KernelEntry(name=stem, file=path, kind="file", line=node.lineno,
                                    dtype=dtype, spec=spec)]
    return []


_DEF_RE = re.compile(r"^def\s+([A-Za-z]\w*)\s*\((?P<sig>[^)]*)\)", re.MULTILINE)


def _classify_text(path: str, stem: str, source: str) -> list[KernelEntry]:
    """A file that does not parse: keep its cells by reading its text."""
    factories = []
    for m in _DEF_RE.finditer(source):
        sig = m.group("sig")
        shapes = re.match(r"\s*[A-Za-z_]\w*\s*[,:)]?", sig) and not sig.lstrip().startswith("*")
        if re.search(r"\bcpu\b", sig) and (shapes or m.group(1).endswith("_kernel")):
            factories.append(KernelEntry(name=m.group(1), file=path, kind="factory",
                                         factory=m.group(1),
                                         line=source.count("\n", 0, m.start()) + 1,
                                         broken=True))
    if factories:
        return factories
    if "prim_func" in source or "tilelang" in source and "jit" in source:
        dtype, spec = _labels(source)
        return [KernelEntry(name=stem, file=path, kind="file", dtype=dtype, spec=spec,
                            broken=True)]
    return []


def find_kernels(dirs: list[str]) -> list[KernelEntry]:
    """Every kernel in ``dirs``, names made unique (a clash gets its folder as prefix)."""
    found: list[KernelEntry] = []
    seen: set[str] = set()
    for d in dirs:
        for path in kernel_files(d):
            for entry in classify(path):
                name = entry.name
                if name in seen:
                    folder = os.path.basename(os.path.dirname(path))
                    name = f"{folder}.{entry.name}"
                    n = 2
                    while name in seen:
                        name, n = f"{folder}.{entry.name}{n}", n + 1
                    entry = KernelEntry(**{**entry.__dict__, "name": name})
                seen.add(name)
                found.append(entry)
    return found


def cell_label(target: str, dtype: str, spec: str) -> str:
    """``c,bf16,gpu``: the bracketed part of a cell id."""
    return f"{target},{DTYPES.get(dtype, dtype)},{spec}"


def matrix_cells(opts: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells of a run as plain dicts: ``{"id", "name", "deps", "kwargs"}``."""
    cells = []
    for entry in find_kernels(kernel_dirs(opts)):
        base = {"kernel": entry.name, "file": entry.file, "kind": entry.kind,
                "factory": entry.factory, "line": entry.line}
        if entry.kind == "factory":
            combos = [(t, d, s) for t in TARGETS for d in DTYPES for s in SPECS]
        else:
            combos = [(t, entry.dtype or "float32", entry.spec or "gpu") for t in TARGETS]
        for target, dtype, spec in combos:
            cells.append({"id": cell_label(target, dtype, spec), "name": entry.name,
                          "deps": [entry.file],
                          "kwargs": {**base, "target": target, "dtype": dtype, "spec": spec}})
    return cells
