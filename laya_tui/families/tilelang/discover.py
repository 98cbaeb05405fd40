"""Which kernels a folder holds and which matrix cells they expand into (stdlib only).

Discovery must stay fast and never import TileLang, so files are classified from their
syntax tree (or, for a file that does not parse, from its text, so its cells keep their ids
while it is being edited):

* a **factory module** has a top-level function taking shapes and a ``cpu`` argument
  (``gemm_kernel(N, K, *, cpu=False, dtype=...)``): one cell per target x dtype x
  specialization (``gemm_kernel[c,bf16,gpu]``);
* a **plain TileLang file**, written the way TileLang's own examples are
  (:mod:`laya_tui.families.tilelang.plain_kernels`): every kernel gets one cell per target,
  labelled with its own dtype and no specialization axis (``gemm[c,fp16]``). A file with
  one kernel names its cells after the file, a file with several after file and kernel
  (``rms_norm.rms_norm_splitk[c,fp32]``);
* any other file (helpers such as ``common.py``, references, a file whose kernels reading
  cannot find) gets one ``stem[file]`` cell saying why it has no kernel cells: no TileLang
  import, nothing built when its run is tried, an import error
  (:mod:`laya_tui.families.tilelang.account`).
"""

from __future__ import annotations

import ast
import json
import os
import re
from typing import TypeAlias

from laya_tui.families.tilelang.data_dtype import LABELS
from laya_tui.families.tilelang.data_dtype import label as dtype_label
from laya_tui.families.tilelang.plain_kernels import KernelEntry, plain_kernels
from laya_tui.families.tilelang.records import CellDict, CellKwargs, ProbeOptions

__all__ = ["DTYPES", "LABELS", "SPECS", "TARGETS", "KernelEntry", "cell_label", "classify",
           "find_kernels", "kernel_dirs", "kernel_files", "matrix_cells"]

TARGETS: tuple[str, ...] = ("c", "cuda")
#: the factories' dtype axis: dtype name -> its label
DTYPES: dict[str, str] = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
SPECS: tuple[str, ...] = ("gpu", "cpu")
_SKIP_FILES = {"__init__.py", "setup.py", "conftest.py"}


def kernel_dirs(opts: ProbeOptions) -> list[str]:
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


def classify(path: str, opts: ProbeOptions | None = None) -> list[KernelEntry]:
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
        from laya_tui.families.tilelang.plain_kernels import source_dtype

        return [KernelEntry(name=stem, file=path, kind="file", dtype=source_dtype(source),
                            broken=True)]
    return []


def account_entry(path: str) -> KernelEntry:
    """The one cell of a file in which reading finds no kernel (``stem[file]``): it says
    why, running the file where it imports TileLang (nothing is dropped silently)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError as exc:
        return KernelEntry(name=stem, file=path, kind="account",
                           note=f"cannot be read ({exc.strerror or exc})")
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        return KernelEntry(name=stem, file=path, kind="account",
                           note=f"is not Python that parses{where}: {exc}")
    imports = any((isinstance(n, ast.Import) and any(a.name.split(".")[0] == "tilelang"
                                                     for a in n.names))
                  or (isinstance(n, ast.ImportFrom) and not n.level
                      and (n.module or "").split(".")[0] == "tilelang")
                  for n in ast.walk(tree))
    note = None if imports else "has no TileLang import: nothing in it to examine"
    return KernelEntry(name=stem, file=path, kind="account", note=note)


#: What :func:`find_kernels` reads: (folders, the options as JSON, (file, its bytes) each).
_Inputs: TypeAlias = "tuple[tuple[str, ...], str, tuple[tuple[str, bytes | None], ...]]"
#: The last :func:`find_kernels` answer and what it read (one discovery asks twice: the
#: lowering cells and the agreement cells).
_LAST: list[tuple[_Inputs, list[KernelEntry]]] = []


def _inputs(dirs: list[str], opts: ProbeOptions | None) -> _Inputs:
    """Everything :func:`find_kernels` reads: the folders, the options (the kernel-args
    table among them) and the bytes of every kernel file (None: unreadable)."""
    files: list[tuple[str, bytes | None]] = []
    for d in dirs:
        for path in kernel_files(d):
            try:
                with open(path, "rb") as fh:
                    files.append((path, fh.read()))
            except OSError:
                files.append((path, None))
    return (tuple(dirs), json.dumps(opts, sort_keys=True, default=repr), tuple(files))


def find_kernels(dirs: list[str], opts: ProbeOptions | None = None) -> list[KernelEntry]:
    """Every kernel in ``dirs``, names made unique (a clash gets its folder as prefix).

    Answered again from the last call when nothing it reads changed (same folders,
    options and kernel file bytes): classifying parses and walks every file."""
    key = _inputs(dirs, opts)
    if _LAST and _LAST[0][0] == key:
        return list(_LAST[0][1])
    found = _find_kernels(dirs, opts)
    _LAST[:] = [(key, list(found))]
    return found


def _find_kernels(dirs: list[str], opts: ProbeOptions | None) -> list[KernelEntry]:
    found: list[KernelEntry] = []
    seen: set[str] = set()
    for d in dirs:
        for path in kernel_files(d):
            for entry in classify(path, opts) or [account_entry(path)]:
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


def cell_label(target: str, dtype: str, spec: str | None) -> str:
    """``c,bf16,gpu`` (factories) or ``c,int8``, ``c,bf16-fp8e4m3`` (plain kernels: their
    data dtype, :mod:`laya_tui.families.tilelang.data_dtype`): a cell id's brackets."""
    label = dtype_label(dtype)
    return f"{target},{label},{spec}" if spec else f"{target},{label}"


def matrix_cells(opts: ProbeOptions) -> list[CellDict]:
    """The cells of a run as plain dicts: ``{"id", "name", "deps", "kwargs"}``.

    Factories: target x dtype x specialization. Plain kernels: one cell per target (the
    pyproject table's ``targets`` if it has them), labelled with the kernel's own dtype
    (one cell per dtype of the table's ``dtypes``).
    """
    cells: list[CellDict] = []
    for entry in find_kernels(kernel_dirs(opts), opts):
        base: CellKwargs = {"kernel": entry.name, "file": entry.file, "kind": entry.kind,
                            "factory": entry.factory, "line": entry.line}
        combos: list[tuple[str, str, str | None]]
        if entry.kind == "account":
            cells.append({"id": "file", "name": entry.name, "deps": [entry.file],
                          "kwargs": {**base, "note": entry.note, "target": "", "dtype": "",
                                     "spec": None}})
            continue
        if entry.kind == "factory":
            combos = [(t, d, s) for t in TARGETS for d in DTYPES for s in SPECS]
        else:
            base["obj"] = entry.obj
            base["key"] = entry.key
            base["called"] = entry.called
            if entry.kind in ("jit", "maker", "nested"):
                base["args"] = entry.args
                base["arg_sources"] = entry.arg_sources
                base["dtype_arg"] = entry.dtype_arg
                base["pass_configs"] = entry.pass_configs
                base["tuned"] = entry.tuned
                base["execution_backend"] = entry.execution_backend
            targets = list(entry.targets) or list(TARGETS)
            dtypes = list(entry.dtypes) or [entry.dtype or "float32"]
            combos = [(t, d, None) for t in targets for d in dtypes]
        for target, dtype, spec in combos:
            cells.append({"id": cell_label(target, dtype, spec), "name": entry.name,
                          "deps": [entry.file],
                          "kwargs": {**base, "target": target, "dtype": dtype, "spec": spec}})
    return cells
