"""The MLX encoder's gap table, by the torch model's module names (issue 43).

The torch fp32 ``ModernBertModel`` runs with hooks that record the inputs and output of
each module the MLX encoder names a step after (``embeddings``, ``layers.N.attn_norm``,
``layers.N.attn``, ``layers.N.mlp_norm``, ``layers.N.mlp``, ``layers.N``, ``final_norm``),
in the explain gap table's budgeted store; the uncompiled MLX forward then reports each
named step through ``capture``: its output error against the torch module's output, and its
local error (the MLX step re-run on the torch module's fp32 input cast to the encoder's
dtype). Valid (unpadded) positions only. Rows, ranking, detail and artifact are the explain
gap table's (:mod:`laya_tui.families.explain.gap_table`); ``path`` is ``mlx``. A compiled
cell's table is the uncompiled forward's (``mx.compile`` fuses the steps: the note says so).
Worker side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import mlx.core as mx
import numpy as np

from laya_tui.families.explain.drift import _leaves, _masked
from laya_tui.families.explain.gap_table import (
    GapTable,
    Row,
    Store,
    budget_bytes,
    summary,
    wanted,
    write_artifact,
)
from laya_tui.families.explain.records import Verdict, VerdictContext
from laya_tui.families.mlx.encoder import DTYPES, LIMITS, MlxEncoder, prepare

if TYPE_CHECKING:
    import torch

#: One named step of the encoder re-run alone on a recorded input.
StepFn = Callable[[mx.array], mx.array]

PATH = "mlx"
COMPILED_NOTE = ("the uncompiled MLX forward's steps (mx.compile fuses them into one graph; "
                 "the cell compared its output)")


def step_names(enc: MlxEncoder) -> list[str]:
    """The named steps of the encoder forward, in execution order."""
    out = ["embeddings"]
    for n in range(enc.spec.num_layers):
        out += ([] if n == 0 else [f"layers.{n}.attn_norm"]) + [
            f"layers.{n}.attn", f"layers.{n}.mlp_norm", f"layers.{n}.mlp", f"layers.{n}"]
    return out + ["final_norm"]


def _local_fns(enc: MlxEncoder, masks: dict[str, mx.array]) -> dict[str, StepFn]:
    fns: dict[str, StepFn] = {"embeddings": enc.embed,
                                            "final_norm": lambda x: enc._norm(x, "final_norm")}
    for n in range(enc.spec.num_layers):
        fns.update(_layer_fns(enc, n, masks))
    return fns


def _layer_fns(enc: MlxEncoder, n: int, masks: dict[str, mx.array]
               ) -> dict[str, StepFn]:
    p, kind = f"layers.{n}", enc.spec.layer_types[n]

    def attn_norm(x: mx.array) -> mx.array:
        return enc._norm(x, f"{p}.attn_norm")

    def attn(x: mx.array) -> mx.array:
        return enc._attention(x, n, masks[kind])

    def mlp_norm(x: mx.array) -> mx.array:
        return enc._norm(x, f"{p}.mlp_norm")

    def mlp(x: mx.array) -> mx.array:
        return enc._mlp(x, n)

    def layer(x: mx.array) -> mx.array:
        return enc.layer(x, n, masks)

    return {f"{p}.attn_norm": attn_norm, f"{p}.attn": attn, f"{p}.mlp_norm": mlp_norm,
            f"{p}.mlp": mlp, p: layer}


def _torch_of(x: mx.array) -> torch.Tensor:
    import torch

    arr = np.array(x.astype(mx.float32))
    return torch.from_numpy(np.ascontiguousarray(arr))


def _nbytes(t: torch.Tensor) -> int:
    return int(t.numel() * t.element_size())


def _error(got: torch.Tensor, ref: torch.Tensor, mask: torch.Tensor, limit: float
           ) -> tuple[float, float]:
    import torch

    a = _masked(got, mask)
    diff = (a - ref).abs()
    d = float(diff.max()) if bool(torch.isfinite(diff).all()) else float("inf")
    return d, limit * max(1.0, float(ref.abs().max()))


def encoder_gap_table(enc: MlxEncoder, model: torch.nn.Module, input_ids: torch.Tensor,
                      attention_mask: torch.Tensor, *,
                      budget: int | None = None, folder: str | None = None) -> GapTable:
    """The table of ``enc`` (its dtype) against the torch fp32 ``model`` on one batch."""
    import torch

    t_start = time.perf_counter()
    names = set(step_names(enc))
    mask = attention_mask.bool()
    store: Store[tuple[str, str], torch.Tensor | None] = Store(budget, folder)
    table = GapTable(budget_bytes=budget)
    modules = {id(m): n for n, m in model.named_modules() if n in names}
    types = {n: type(m).__name__ for n, m in model.named_modules() if n in names}

    def pre(m: torch.nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        leaves = _leaves((tuple(args), dict(kwargs)), torch) or []
        first: object = next((t for t in leaves if t.is_floating_point()), None)
        if first is None:  # the embeddings: token ids
            first = kwargs.get("input_ids", args[0] if args else None)
        kept = first.detach().cpu().clone() if isinstance(first, torch.Tensor) else None
        # stored as the call starts: counted (and spilled) while the calls inside it run
        store.put((modules[id(m)], "input"), kept, 0 if kept is None else _nbytes(kept))

    def post(m: torch.nn.Module, _args: tuple[object, ...], out: object) -> None:
        leaves = _leaves(out, torch) or []
        first = next((t for t in leaves if t.is_floating_point()), None)
        kept = None if first is None else _masked(first.detach().float().cpu(), mask)
        store.put((modules[id(m)], "output"), kept, 0 if kept is None else _nbytes(kept))

    handles = [m.register_forward_pre_hook(pre, with_kwargs=True)
               for m in model.modules() if id(m) in modules]
    handles += [m.register_forward_hook(post) for m in model.modules() if id(m) in modules]
    try:
        with torch.no_grad():
            model(input_ids=input_ids, attention_mask=attention_mask)
    finally:
        for h in handles:
            h.remove()
    batch = prepare(input_ids, attention_mask)
    masks = enc.masks(batch.valid)
    local = _local_fns(enc, masks)
    dtype = DTYPES[enc.dtype]
    limit = LIMITS.get(enc.dtype, LIMITS["fp16"])
    order = [0]

    def capture(name: str, value: mx.array) -> mx.array:
        order[0] += 1
        x, output = store.take_all([(name, "input"), (name, "output")])
        rec = {"input": x, "output": output}
        if rec["output"] is None:
            table.skipped.setdefault(name, "no output recorded in the torch reference")
            return value
        mx.eval(value)
        error, lim = _error(_torch_of(value), rec["output"], mask, limit)
        row = Row(name, types.get(name, "?"), 0, enc.dtype, error, None, lim, order[0])
        x = rec["input"]
        if x is None:
            row.note = "not re-run: no input recorded"
        else:
            arr = mx.array(x.numpy().astype(np.int32)) if not x.is_floating_point() else \
                mx.array(x.float().numpy()).astype(dtype)
            got = local[name](arr)
            mx.eval(got)
            row.local = _error(_torch_of(got), rec["output"], mask, limit)[0]
        table.rows.append(row)
        return value

    try:
        out = enc.forward(batch.ids, batch.valid, capture=capture)
        mx.eval(out)
    finally:
        table.peak_bytes, table.activation_bytes = store.peak, store.total
        table.spilled_bytes, table.spilled_files = store.spilled, store.files
        store.close()
    table.seconds = time.perf_counter() - t_start
    return table


def table_after_compare(ctx: VerdictContext, subject: str, verdict: Verdict, *,
                        enc: MlxEncoder, model: torch.nn.Module, inputs: dict[str, torch.Tensor],
                        compiled: bool = False) -> GapTable | None:
    """After a parity verdict: the encoder's gap table when wanted (failing, or
    ``--numerics``), as the explain family emits it. Never raises."""
    if not wanted(ctx.options, verdict.get("passed")):
        return None
    from laya_tui.core.files import artifact_dir

    ctx.step("gap table")
    folder = artifact_dir(ctx.options, "numerics")
    try:
        table = encoder_gap_table(enc, model, inputs["input_ids"], inputs["attention_mask"],
                                  budget=budget_bytes(), folder=folder)
    except Exception as exc:  # noqa: BLE001 - the table must never hide the verdict
        ctx.log(f"gap table failed: {type(exc).__name__}: {exc}"[:300],
                subject=f"{subject} gap table")
        return None
    if compiled:
        table.note = COMPILED_NOTE
    artifact = write_artifact(table, folder, f"{ctx.id}-{subject}", PATH)
    top = next(iter(table.ranked()), None)
    ctx.log(summary(table), subject=f"{subject} gap table",
            value=None if top is None or top.local is None else float(f"{top.local:.4g}"),
            limit=None if top is None else float(f"{top.limit:.4g}"),
            seconds=round(table.seconds, 4),
            detail={"gap_table": table.detail(path=PATH, artifact=artifact)})
    return table
