"""Load an AOTInductor ``.pt2`` in a fresh process and run it (aoti family, worker side).

``python -m laya_tui.families.aoti.load PACKAGE INPUTS --result RESULT [--forbid MODULE ...]``

INPUTS is a ``torch.save`` of ``{"shapes": [{"name", "args", "kwargs"}]}``; RESULT gets a
``torch.save`` of the load time, each shape's flat outputs and first-run time, the package
metadata, which ``--forbid`` modules ended up imported, and the error if any. This module
never imports the model code: it proves the package stands alone. Exit codes: 0 ran, 1 a
load or run error (described in RESULT), 2 bad input or a shape outside the exported ranges.

:func:`check_shapes` is plain Python (no torch) so the probe and tests use it too; the input
spec it reads travels inside the package metadata under :data:`SPEC_KEY`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # the fresh process imports nothing of laya_tui beyond this module
    import torch
    from torch.utils._pytree import TreeSpec

    from laya_tui.families.aoti.records import (
        DimRange,
        InputEntry,
        InputSpec,
        Kwargs,
        LoadError,
        LoadResult,
    )

SPEC_KEY = "LAYA_INPUT_SPEC"
KEY_KEY = "LAYA_PACKAGE_KEY"


def encode_metadata(value: object) -> str:
    """A JSON value as hex: package metadata then holds only ``[0-9a-f]``.

    The C++ package loader parses the metadata file; plain JSON strings full of quotes and
    braces are the one thing about these packages that differs from torch's own keys, and
    are suspected in a load segfault seen on torch 2.11.
    """
    return json.dumps(value, separators=(",", ":")).encode().hex()


def decode_metadata(text: str | None) -> object:
    """Inverse of :func:`encode_metadata` (None for a missing or unreadable value)."""
    if not text:
        return None
    try:
        return json.loads(bytes.fromhex(text).decode())
    except ValueError:
        return None
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ShapeError(ValueError):
    """Inputs that the exported ranges do not cover (one readable line)."""


def _dim_label(inp: InputEntry, d: int, dim: DimRange) -> str:
    return f"{inp['name']} dim {d} ({dim.get('name') or f'dim{d}'})"


def shape_problems(spec: InputSpec, shapes: Sequence[Sequence[int]],
                   dtypes: Sequence[str] | None = None) -> list[str]:
    """What is wrong with flat input ``shapes`` (and ``dtypes``) against an input spec.

    ``spec["inputs"]`` lists, in flat order, ``{name, dtype, dims: [{name, min, max,
    multiple?, symbol?}]}``. Sizes sharing a ``symbol`` must be equal.
    """
    inputs = spec.get("inputs", [])
    problems: list[str] = []
    if len(shapes) != len(inputs):
        return [f"got {len(shapes)} tensor inputs, the package was exported with {len(inputs)}"]
    seen: dict[str, tuple[str, int]] = {}
    for i, (inp, shape) in enumerate(zip(inputs, shapes, strict=True)):
        dims = inp.get("dims", [])
        if dtypes is not None and inp.get("dtype") and dtypes[i] != inp["dtype"]:
            problems.append(f"{inp['name']} has dtype {dtypes[i]}, exported with {inp['dtype']}")
        if len(shape) != len(dims):
            problems.append(f"{inp['name']} has {len(shape)} dims {list(shape)}, "
                            f"exported with {len(dims)}")
            continue
        for d, (size, dim) in enumerate(zip(shape, dims, strict=True)):
            label = _dim_label(inp, d, dim)
            lo, hi, step = int(dim["min"]), int(dim["max"]), int(dim.get("multiple") or 1)
            if lo == hi and size != lo:
                problems.append(f"{label} = {size}, but the package is static there ({lo})")
                continue
            if not lo <= size <= hi:
                problems.append(f"{label} = {size} is outside the exported range {lo}..{hi}")
            elif step > 1 and size % step:
                problems.append(f"{label} = {size} is not a multiple of {step} "
                                f"(exported range {lo}..{hi}, step {step})")
            sym = dim.get("symbol")
            if sym:
                if sym in seen and seen[sym][1] != size:
                    other, osize = seen[sym]
                    problems.append(f"{label} = {size} must equal {other} = {osize} "
                                    "(one dynamic dim)")
                seen.setdefault(sym, (label, size))
    return problems


def check_shapes(spec: InputSpec, shapes: Sequence[Sequence[int]],
                 dtypes: Sequence[str] | None = None, *, what: str = "inputs") -> None:
    """Raise :class:`ShapeError` with one line listing every problem, if any."""
    problems = shape_problems(spec, shapes, dtypes)
    if problems:
        raise ShapeError(f"{what} outside the exported ranges: " + "; ".join(problems))


def flat_tensors(args: Sequence[object], kwargs: Kwargs, in_spec: TreeSpec | None = None
                 ) -> list[torch.Tensor]:
    """Tensor leaves of ``(args, kwargs)`` in the order the package expects them."""
    import torch
    from torch.utils import _pytree as pytree

    if in_spec is not None and kwargs:
        from torch.export._tree_utils import reorder_kwargs

        kwargs = reorder_kwargs(kwargs, in_spec)
    leaves = pytree.tree_leaves((tuple(args), kwargs))
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def isa_probe_seconds() -> float:
    """Seconds of inductor's (cached) CPU vector-ISA probe, which loading a package runs."""
    t0 = time.perf_counter()
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        pick_vec_isa()
    except Exception:  # noqa: BLE001 - a probe failure shows up in the load itself
        pass
    return time.perf_counter() - t0


def _error(step: str, exc: BaseException) -> LoadError:
    return {"step": step, "type": type(exc).__name__, "message": str(exc)[:8000],
            "traceback": "".join(traceback.format_exception(exc))[-8000:]}


def run(package: str, inputs_path: str, forbid: Sequence[str] = ()) -> tuple[int, LoadResult]:
    """Load ``package``, run every shape of ``inputs_path``; ``(exit code, result dict)``."""
    t0 = time.perf_counter()
    import torch

    result: LoadResult = {"import_seconds": time.perf_counter() - t0, "outputs": {},
                          "first_run_seconds": {}, "error": None, "metadata": {},
                          "threads": torch.get_num_threads()}
    try:
        shapes = torch.load(inputs_path, weights_only=True)["shapes"]
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        result["error"] = _error("inputs", exc)
        return EXIT_USAGE, result
    try:
        t1 = time.perf_counter()
        import torch._inductor.package  # noqa: F401 - its import is not the package's load

        result["loader_import_seconds"] = time.perf_counter() - t1
        result["isa_probe_seconds"] = isa_probe_seconds()
        t1 = time.perf_counter()
        compiled = torch._inductor.aoti_load_package(package)
        # The user-visible load includes the CPU ISA probe (it compiles tiny programs).
        result["load_seconds"] = time.perf_counter() - t1 + result["isa_probe_seconds"]
        result["metadata"] = dict(compiled.get_metadata())
    except Exception as exc:  # noqa: BLE001
        result["error"] = _error("load-fresh", exc)
        return EXIT_FAILED, result
    decoded = decode_metadata(result["metadata"].get(SPEC_KEY))
    # the spec this package's export step wrote (JSON read back); unreadable: no checks
    spec = (cast("InputSpec", decoded)
            if isinstance(decoded, dict) and not decoded.get("unreadable") else None)
    from torch.utils import _pytree as pytree

    in_spec = pytree.treespec_loads(compiled.loader.get_call_spec()[0])
    for item in shapes:
        args, kwargs = list(item.get("args") or []), dict(item.get("kwargs") or {})
        try:
            flat = flat_tensors(args, kwargs, in_spec)
            if spec is not None:
                check_shapes(spec, [tuple(t.shape) for t in flat], [str(t.dtype) for t in flat],
                             what=f"shape {item['name']}")
        except ShapeError as exc:
            result["error"] = {"step": "shape-check", "type": "ShapeError", "message": str(exc),
                               "traceback": ""}
            return EXIT_USAGE, result
        try:
            t2 = time.perf_counter()
            with torch.no_grad():
                out = compiled(*args, **kwargs)
            result["first_run_seconds"][item["name"]] = time.perf_counter() - t2
        except Exception as exc:  # noqa: BLE001
            error = _error("run", exc)
            error["shape"] = item["name"]
            result["error"] = error
            return EXIT_FAILED, result
        leaves = pytree.tree_leaves(out)
        result["outputs"][item["name"]] = [x for x in leaves if isinstance(x, torch.Tensor)]
    result["forbidden_imported"] = sorted(m for m in forbid if m in sys.modules)
    return EXIT_OK, result


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="laya_tui.families.aoti.load",
                                 description="load a .pt2 in this fresh process and run it")
    ap.add_argument("package")
    ap.add_argument("inputs")
    ap.add_argument("--result", required=True)
    ap.add_argument("--forbid", action="append", default=[], metavar="MODULE",
                    help="module names that must not be imported here (reported, not enforced)")
    args = ap.parse_args(argv)
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload()
    for path in (args.package, args.inputs):
        if not os.path.isfile(path):
            print(f"laya_tui.families.aoti.load: error: no such file: {path}", file=sys.stderr)
            return EXIT_USAGE
    code, result = run(args.package, args.inputs, args.forbid)
    import torch

    torch.save(result, args.result)
    err = result.get("error")
    if err:
        first = next((ln for ln in str(err["message"]).splitlines() if ln.strip()), err["type"])
        print(f"laya_tui.families.aoti.load: error: {err['step']}: {err['type']}: {first}",
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
