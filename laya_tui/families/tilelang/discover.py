"""Which kernels a folder holds and which matrix cells they expand into (stdlib only).

Discovery must stay fast and never import TileLang, so files are classified from their
syntax tree (or, for a file that does not parse, from its text, so its cells keep their ids
while it is being edited):

* a **factory module** has a top-level function taking shapes and a ``cpu`` argument
  (``gemm_kernel(N, K, *, cpu=False, dtype=...)``): one cell per target x dtype x
  specialization;
* a **plain TileLang file**, written the way TileLang's own examples are: every
  ``@tilelang.jit`` function (``@autotune`` stacked on it too) and every module-level
  PrimFunc (``@T.prim_func`` or ``kernel = make(...)``) is a kernel with its own cells, one
  per target, labelled with the dtype its arguments build it with and the specialization its
  source uses. A file with one kernel names its cells after the file (``gemm[c,fp16,gpu]``),
  a file with several after file and kernel (``rms_norm.rms_norm_splitk[...]``). A jit
  kernel's arguments come from :mod:`laya_tui.families.tilelang.kernel_args`;
* anything else (helpers such as ``common.py``, references) expands into nothing.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from laya_tui.families.tilelang import kernel_args as ka

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
    kind: str  # "factory" | "jit" | "primfunc" | "file" (a plain file that does not parse)
    factory: str | None = None
    line: int | None = None  # where the factory (or the kernel object) is defined
    dtype: str | None = None  # plain files: the dtype their source uses
    spec: str | None = None  # plain files: "gpu" or "cpu" by the constructs used
    broken: bool = False  # did not parse (the cells still exist and report the error)
    obj: str | None = None  # plain files: the module attribute holding the kernel
    key: str | None = None  # plain files: "path/file.py::kernel" (the pyproject table key)
    args: dict[str, Any] = field(default_factory=dict)  # jit kernels: resolved arguments
    arg_sources: dict[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()  # jit kernels: required arguments nobody gives
    dtypes: tuple[str, ...] = ()  # the pyproject table's dtypes (one cell each)
    dtype_arg: str | None = None
    targets: tuple[str, ...] = ()  # the pyproject table's targets
    pass_configs: Any = None  # literal @tilelang.jit(pass_configs=...)


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


def classify(path: str, opts: dict[str, Any] | None = None) -> list[KernelEntry]:
    """The kernels one file defines (empty for helpers); plain files get their arguments
    resolved from ``opts`` (``kernel_args``, ``workspace``) and the file itself."""
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
    return plain_kernels(path, stem, source, tree, opts or {})


def _has_prim_func(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.FunctionDef) and any(ka.is_prim_func_decorator(d)
                                                      for d in n.decorator_list)
               for n in ast.walk(fn) if n is not fn)


def plain_kernels(path: str, stem: str, source: str, tree: ast.Module,
                  opts: dict[str, Any]) -> list[KernelEntry]:
    """Every ``@tilelang.jit`` function (``@autotune`` on top too) and module-level PrimFunc."""
    module = ka.ModuleScope(tree)
    jit_names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                 and any(ka.is_jit_decorator(d) for d in n.decorator_list)}
    found: list[tuple[str, ast.AST, str]] = []  # (object name, node, kind)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            decos = node.decorator_list
            if any(ka.is_jit_decorator(d) for d in decos):
                found.append((node.name, node, "jit"))
            elif any(ka.is_prim_func_decorator(d) for d in decos):
                found.append((node.name, node, "primfunc"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            callee = ast.unparse(node.value.func)
            maker = module.functions.get(callee)
            if callee in jit_names:
                continue  # a call of a jit kernel (it runs it), not a kernel of its own
            if (isinstance(maker, ast.FunctionDef) and _has_prim_func(maker)) or callee in (
                    "tilelang.compile", "tl.compile", "T.prim_func", "tilelang.jit"):
                found.append((node.targets[0].id, node, "primfunc"))
    entries = []
    workspace = opts.get("workspace")
    lines = source.splitlines()
    for obj, node, kind in found:
        name = stem if len(found) == 1 else f"{stem}.{obj}"
        # a kernel function is labelled by its own source; a PrimFunc built by a call
        # (``kernel = make(64)``) by its file's
        segment = "\n".join(lines[node.lineno - 1:node.end_lineno or node.lineno]) \
            if isinstance(node, ast.FunctionDef) else source
        dtype, spec = _labels(segment)
        entry = KernelEntry(name=name, file=path, kind=kind, line=node.lineno, dtype=dtype,
                            spec=spec, obj=obj, key=ka.table_key(path, obj, workspace))
        if kind == "jit" and isinstance(node, ast.FunctionDef):
            sig = ka.kernel_signature(node, module)
            res = ka.resolve(tree, sig, module, path, opts)
            entry = replace(entry, args=res.values, arg_sources=res.sources,
                            missing=tuple(res.missing), dtypes=tuple(res.dtypes or ()),
                            dtype_arg=res.dtype_arg, targets=tuple(res.targets or ()),
                            dtype=_arg_dtype(res.values, sig) or dtype,
                            pass_configs=sig.jit_kwargs.get("pass_configs") or None)
        entries.append(entry)
    return entries


def _arg_dtype(values: dict[str, Any], sig: ka.KernelSig) -> str | None:
    """The dtype the resolved arguments build the kernel with (``dtype``, else ``*dtype``)."""
    names = ["dtype"] + [p for p in sig.accepted if p.endswith("dtype") and "accum" not in p]
    for n in names:
        v = values.get(n)
        if isinstance(v, str) and v in DTYPES:
            return v
    return None


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


def find_kernels(dirs: list[str], opts: dict[str, Any] | None = None) -> list[KernelEntry]:
    """Every kernel in ``dirs``, names made unique (a clash gets its folder as prefix)."""
    found: list[KernelEntry] = []
    seen: set[str] = set()
    for d in dirs:
        for path in kernel_files(d):
            for entry in classify(path, opts):
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
    """The cells of a run as plain dicts: ``{"id", "name", "deps", "kwargs"}``.

    Factories: target x dtype x specialization. Plain kernels: one cell per target (the
    pyproject table's ``targets`` if it has them), labelled with the dtype their arguments
    give (one cell per dtype of the table's ``dtypes``) and the specialization their source
    uses.
    """
    cells = []
    for entry in find_kernels(kernel_dirs(opts), opts):
        base: dict[str, Any] = {"kernel": entry.name, "file": entry.file, "kind": entry.kind,
                                "factory": entry.factory, "line": entry.line}
        if entry.kind == "factory":
            combos = [(t, d, s) for t in TARGETS for d in DTYPES for s in SPECS]
        else:
            base["obj"] = entry.obj
            if entry.kind == "jit":
                base.update(args=entry.args, arg_sources=entry.arg_sources,
                            missing=list(entry.missing), key=entry.key,
                            dtype_arg=entry.dtype_arg, pass_configs=entry.pass_configs)
            targets = list(entry.targets) or list(TARGETS)
            dtypes = list(entry.dtypes) or [entry.dtype or "float32"]
            combos = [(t, d, entry.spec or "gpu") for t in targets for d in dtypes]
        for target, dtype, spec in combos:
            cells.append({"id": cell_label(target, dtype, spec), "name": entry.name,
                          "deps": [entry.file],
                          "kwargs": {**base, "target": target, "dtype": dtype, "spec": spec}})
    return cells
