"""What a plain kernel's cell builds: the kernel as the file's own run builds it, else its
statically read arguments, else an honest outcome (worker side).

* built by the file's run (:mod:`laya_tui.families.tilelang.capture`): the traced PrimFunc,
  its arguments and their sources, ``out_idx``, pass configs and execution backend, the
  file's own check. A ``[tool.laya-tui.kernel-args]`` table still wins (the kernel is then
  traced again with the table's values over the captured ones);
* its tracing raised in the file's run: traced again in the cell (the same failure is the
  cell's diagnostic); when the reason is a GPU-only call on a machine without one, skipped
  with that reason (it runs on a GPU host);
* not built by its own run (a library module without an entry point): the run of a file
  that imports it, beside it or elsewhere in the workspace (a project's tests;
  :mod:`laya_tui.families.tilelang.importers`), when that run builds the kernel (its
  arguments' sources name that file);
* built by no run: the static arguments
  (:mod:`laya_tui.families.tilelang.static_args`) when they are complete (a kernel nothing
  builds whose arguments all have defaults is examined at them: they are its author's
  sizes); else a kernel nothing in the file references (or made in a library file's maker
  that nothing runs) is skipped with the lines to add, one whose run needs a GPU first is
  skipped with that reason, and any other could not be examined (status ``error``) with the
  lines to add and how the file's run ended.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.cell_state import CellState, KernelCall, has_gpu
from laya_tui.families.tilelang.missing_package import (
    missing_module,
    missing_package,
    unexamined_reason,
)
from laya_tui.families.tilelang.records import KernelArgs, PassConfigs, ProbeContext, ProbeOptions

if TYPE_CHECKING:
    import ast

    from laya_tui.families.tilelang.arg_table import FileDefaults
    from laya_tui.families.tilelang.capture_model import Capture
    from laya_tui.families.tilelang.capture_types import TracedPrimFunc


def expected_kernels(file: str, opts: ProbeOptions) -> set[str]:
    """The kernels of ``file`` its own entry points reference (what its run should build)."""
    import ast

    from laya_tui.families.tilelang.discover import classify
    from laya_tui.families.tilelang.static_calls import referenced_from_entries
    from laya_tui.families.tilelang.static_eval import ModuleScope

    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            module = ModuleScope(ast.parse(f.read(), filename=file))
    except (OSError, SyntaxError):
        return set()
    return {e.obj for e in classify(file, opts) if e.obj and e.called
            and (e.kind == "primfunc" or referenced_from_entries(module, e.obj)
                 or e.obj == "main" or e.obj.startswith("test"))}  # an entry point itself


def plain_call(ctx: ProbeContext, state: CellState, *, obj: str, args: KernelArgs,
               sources: dict[str, str], missing: list[str] | None, key: str | None,
               dtype_arg: str | None, pass_configs: PassConfigs | None,
               called: bool, execution_backend: str | None) -> KernelCall:
    """The :class:`KernelCall` of the cell; ``ctx.skip``/``ctx.error`` when the kernel
    cannot be examined here."""
    from laya_tui.families.tilelang.capture import capture_file

    opts = ctx.options
    table = {k: v for k, v in args.items()  # what the user wrote for laya-tui wins
             if str(sources.get(k, "")).startswith(("pyproject", "LAYA_ARGS"))}
    # a kernel made inside nested functions is traced by the file's run only: the table's
    # values go to the run's call of its top-level maker instead
    over = {**table, **({dtype_arg: state.dtype} if dtype_arg else {})}
    if state.kind == "nested":
        dtype_arg = None  # given to the run, not traced again
    cap = capture_file(state.file, expected_kernels(state.file, opts),
                       overrides={obj: over} if over and state.kind == "nested" else None)
    state.extra["file_run"] = {"entries": [f"{e}: {how}" for e, how in cap.entries],
                               "seconds": round(cap.seconds, 3)}
    if cap.faked:
        state.extra["file_run"]["faked_ops"] = cap.faked
    if cap.unchecked:
        state.extra["file_run"]["checks_let_pass"] = cap.unchecked
    build, failure, name, by = cap.pick(obj, state.dtype), cap.failures.get(obj), obj, None
    if build is None and failure is None:  # a library module: the files importing it
        cap, name, by = _built_elsewhere(ctx, state, obj, opts, cap)
        build, failure = cap.pick(name, state.dtype), cap.failures.get(name)
    if build is not None:
        call = KernelCall(obj=obj, args=dict(build.args), sources=dict(build.sources),
                          pass_configs=dict(build.pass_configs), out_idx=build.out_idx,
                          execution_backend=execution_backend or build.execution_backend,
                          compile_flags=build.compile_flags, func=build.func,
                          record=build.call, module=build.module or cap.module,
                          run_globals=dict(build.run_globals))
        n = len(cap.builds_of(name))
        state.extra["built_by"] = {
            "entry": build.entry, "site": build.site, "target": build.target,
            "builds": n, **({"tuned": build.tuned} if build.tuned else {}),
            **({"globals": build.run_globals} if build.run_globals else {}),
            **({"file": by} if by else {})}
        built_dtype = _built_dtype(build.func, state.dtype)
        if built_dtype:
            state.extra["built_by"]["data dtype"] = built_dtype
        if state.kind == "nested" and over:  # the run's own trace, with the table's
            call.sources.update({k: sources.get(k, "the cell's dtype") for k in over})
            call.record = None  # values (the file's check was made with other sizes)
        elif table or dtype_arg:  # the table wins: trace again with its values (the
            call.func = None  # file's own check was made with other sizes: not used)
            call.record = None
            call.args.update(table)
            call.sources.update({k: sources[k] for k in table})
        _dtype_arg(call, dtype_arg, state.dtype)
        return call
    if failure is not None:
        if failure.gpu and not has_gpu():
            ctx.skip(f"{obj} needs a GPU to be traced, so it is examined on a GPU host: "
                     f"{failure.gpu}")
        call = KernelCall(obj=obj, args={**failure.args, **table},
                          sources={**failure.sources, **{k: sources[k] for k in table}},
                          pass_configs=dict(pass_configs or {}),
                          execution_backend=execution_backend,
                          module=failure.module or cap.module,
                          trace_error=None if table else failure.error,
                          run_globals=dict(failure.run_globals))
        state.extra["built_by"] = {"entry": "the file's run", "site": failure.site,
                                   "raised": f"{type(failure.error).__name__}",
                                   **({"file": by} if by else {})}
        _dtype_arg(call, dtype_arg, state.dtype)
        return call
    if cap.error and cap.gpu_needed and not has_gpu():  # as `python file.py` fails here
        ctx.skip(f"{obj}'s file needs a GPU to be imported, so it is examined on a GPU host: "
                 f"{cap.gpu_needed}")
    drift = tilelang_import_error(cap.import_error)
    if drift is not None:  # `python file.py` fails so with this TileLang, whatever the
        # kernel's arguments: the finding (the static reading's trace would import it too)
        state.extra["built_by"] = {"entry": "the file's import",
                                   "raised": type(drift).__name__}
        return KernelCall(obj=obj, args={}, sources={}, pass_configs={},
                          execution_backend=execution_backend, trace_error=drift)
    if state.kind == "nested":  # only the file's run can make it: no static fallback
        _not_built(ctx, state, obj, cap, key)
    if missing is None:  # not a cell parameter: a kernel the run built misses nothing
        missing = static_missing(state.file, obj, opts)
    if not missing:  # every argument known: from the file, the table, or its defaults
        call = KernelCall(obj=obj, args=dict(args), sources=dict(sources),
                          pass_configs=dict(pass_configs or {}),
                          execution_backend=execution_backend)
        if not (called or table):  # nothing builds it: its own defaults are its sizes
            state.extra["built_by"] = {
                "entry": "its own defaults (nothing in its file or the files importing it "
                         "builds it)", "file_run": cap.how_it_ended()}
        elif state.kind in ("jit", "maker") and cap.entries:
            state.extra["built_by"] = {"entry": "the file's syntax tree",
                                       "file_run": cap.how_it_ended()}
        _dtype_arg(call, dtype_arg, state.dtype)
        return call
    from laya_tui.families.tilelang.arg_table import file_defaults, missing_message
    from laya_tui.families.tilelang.capture_model import budget_stop

    defaults = _file_defaults(state.file, missing, file_defaults)
    where = key or f"{state.file}::{obj}"
    workspace = opts.get("workspace")
    if not called:
        ctx.skip(missing_message(obj, where, missing, workspace, defaults, called=False))
    if cap.gpu_needed and not has_gpu():
        ctx.skip(f"{obj} is built only after the file's run needs a GPU, so it is examined "
                 f"on a GPU host: {cap.gpu_needed}")
    ran = cap.error or cap.how_it_ended()
    top = missing_package(ran, state.file)
    if top is not None:  # `python file.py` stops there too: not the file's arguments
        ctx.error(unexamined_reason(obj, state.file, top, ran))
    stop = budget_stop(ran)
    if stop:  # the machine's time ran out, not the file's arguments
        ctx.error(f"{stop} before it built {obj}: raise LAYA_TUI_TILELANG_CAPTURE_S (CPU "
                  f"seconds) or give {obj}'s arguments in [tool.laya-tui] or LAYA_ARGS")
    ctx.error(missing_message(obj, where, missing, workspace, defaults)
              + f"\n(the file's own run: {ran})")
    raise AssertionError("unreachable")  # ctx.error raises


def _not_built(ctx: ProbeContext, state: CellState, obj: str, cap: Capture,
               key: str | None) -> None:
    """A kernel made inside nested functions that the file's run did not build: skipped
    where the run needs a GPU, or where nothing runs it (a library file none of whose
    importers builds it: the lines to add), else could not be examined (``ctx`` raises
    either way)."""
    ran = cap.error or cap.how_it_ended()
    top = missing_package(cap.error, state.file)  # its import needs a missing package
    if top is not None:
        ctx.error(unexamined_reason(obj, state.file, top, ran))
    tried = state.extra.get("importers_tried") or []
    if not has_gpu():
        gpu = cap.gpu_needed or next((t["gpu_needed"] for t in tried if t["gpu_needed"]), None)
        if gpu:
            ctx.skip(f"{obj} is built only after the file's run needs a GPU, so it is "
                     f"examined on a GPU host: {gpu}")
    if not cap.error and not cap.entries:  # a library file: nothing of its own runs
        from laya_tui.families.tilelang.arg_table import missing_message

        needed, defaults = _maker_parameters(state.file, obj)
        runs = "; ".join(f"{os.path.basename(t['file'])}: {t['ended']}" for t in tried)
        ctx.skip(missing_message(obj, key or f"{state.file}::{obj}", needed,
                                 ctx.options.get("workspace"), defaults, called=False)
                 + (f"\n(the files importing it ran and did not build it: {runs})"
                    if runs else ""))
    if not cap.error and cap.entries and all(how == "ran" or how.startswith("exited (0")
                                             or how == "exited (None)"
                                             for _, how in cap.entries):
        ctx.skip(f"{obj} makes its kernel inside nested functions and the file's own run "
                 f"went to its end without building it ({ran}): `python "
                 f"{os.path.basename(cap.file)}` does not build it either (an option or a "
                 f"branch the run does not take)")
    for entry, how in cap.entries:  # the file's own test needs a package this host lacks
        top = missing_module(how) if "raised ModuleNotFoundError" in how else None
        if top is not None:
            ctx.skip(f"{obj} was not built: the file's own {entry} needs `{top}`, not "
                     f"installed here (pip install {top}): {how}")
    ctx.error(f"{obj} makes its kernel inside nested functions (a maker's maker, a closure "
              f"or a class), so only the file's own run can build it, and that run did not "
              f"build it: {ran}")


def _built_elsewhere(ctx: ProbeContext, state: CellState, obj: str, opts: ProbeOptions,
                     own: Capture) -> tuple[Capture, str, str | None]:
    """(capture, build name, importing file) of the first file beside ``state.file`` whose
    own run builds ``obj`` (or raises tracing it); ``(own, obj, None)`` when none does."""
    from laya_tui.families.tilelang.capture import capture_file, foreign_key
    from laya_tui.families.tilelang.importers import importers_of

    key = foreign_key(state.file, obj)
    tried = state.extra.setdefault("importers_tried", [])
    for other in importers_of(state.file, workspace=opts.get("workspace"), kernel=obj):
        cap = capture_file(other, expected_kernels(other, opts), want=key)
        tried.append({"file": other, "ended": cap.error or cap.how_it_ended(),
                      "gpu_needed": cap.gpu_needed})
        if cap.builds_of(key) or key in cap.failures:
            ctx.depends_on(other)  # its run is where the arguments come from
            state.extra["file_run"] = {
                "file": other, "entries": [f"{e}: {how}" for e, how in cap.entries],
                "seconds": round(cap.seconds, 3)}
            return cap, key, other
    return own, obj, None


def tilelang_import_error(exc: BaseException | None) -> ImportError | None:
    """``exc`` when it is an ImportError of a TileLang name (``cannot import name 'jit' from
    'tilelang.autotuner'``, ``No module named 'tilelang.x'``): a file written for another
    TileLang, which the installed one refuses as ``python file.py`` shows. None otherwise
    (a package missing here is not the kernel's failure)."""
    if not isinstance(exc, ImportError):
        return None
    names = (exc.name or "", re.search(r"from '([\w.]+)'", str(exc)))
    module = names[1].group(1) if names[1] else names[0]
    return exc if module == "tilelang" or module.startswith("tilelang.") else None


def _maker_parameters(file: str, obj: str) -> tuple[list[str], FileDefaults]:
    """The parameters of the top-level maker ``obj`` that have no default, and the values
    its file gives them elsewhere (the lines a table for it starts from)."""
    import ast

    from laya_tui.families.tilelang.arg_table import file_defaults

    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), filename=file)
    except (OSError, SyntaxError, ValueError):
        return [], {}
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == obj), None)
    if fn is None:
        return [], {}
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    missing = [p.arg for p in positional[:len(positional) - len(a.defaults)]]
    missing += [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    return missing, file_defaults(tree, missing)


def _dtype_arg(call: KernelCall, dtype_arg: str | None, dtype: str) -> None:
    if dtype_arg:
        call.args[dtype_arg] = dtype
        call.sources[dtype_arg] = "the cell's dtype"
        call.func = None


def static_missing(file: str, obj: str, opts: ProbeOptions) -> list[str]:
    """The arguments of ``obj`` that the file's syntax tree gives no value for: what the
    static fallback lacks when the file's run did not build the kernel."""
    from laya_tui.families.tilelang.discover import classify

    return next((list(e.missing) for e in classify(file, opts) if e.obj == obj), [])


def _file_defaults(file: str, missing: list[str],
                   finder: Callable[[ast.Module, list[str]], FileDefaults]
                   ) -> FileDefaults:
    import ast

    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            return finder(ast.parse(f.read(), filename=os.path.basename(file)), missing)
    except (OSError, SyntaxError):
        return {}


def _built_dtype(func: TracedPrimFunc | None, dtype: str) -> str | None:
    """What the file's run built when its data dtype is not the cell id's (read from the
    file before the run: a maker's dtype comes from its caller), else None."""
    from laya_tui.families.tilelang.capture_model import kernel_data_dtype
    from laya_tui.families.tilelang.data_dtype import label

    built = kernel_data_dtype(func) if func is not None else None
    if not built or label(built) == label(dtype):
        return None
    return (f"{label(built)}: the file's run built it so (the cell id's {label(dtype)} is "
            f"what reading the file gives)")
