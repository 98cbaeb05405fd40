"""aoti probes: can the model be exported, packaged with AOTInductor, loaded in a fresh
process, and does it give the same answers? At what cost?

Cells: ``aoti/decision[fp32]`` and ``aoti/decision[bf16]`` (the tiny ModernBERT decision
model; bf16 is a weight-cast copy compared with the fp32 eager reference),
``aoti/decision[bf16,cuda]`` (packaged for CUDA, compared with the fp32 CPU reference;
skipped without a GPU) and one
``aoti/model[MODULE:CALLABLE]`` per ``--model``, packaged for ``--device`` (cpu or cuda;
the CPU without it). Packages and results.json go to ``--out``
(``<out>/aoti``) or the per-user cache; an unchanged re-run reuses the package.
Heavy imports stay inside the function (discovery must stay fast).
"""

from __future__ import annotations

from typing import Any

from laya_tui import api, param, probe


def _cells() -> list[Any]:
    cells = [param("fp32", name="decision", kind="decision", dtype="fp32"),
             param("bf16", name="decision", kind="decision", dtype="bf16"),
             param("bf16,cuda", name="decision", kind="decision", dtype="bf16",
                   device="cuda")]
    if not api.options().get("demo", True):  # the decision model is part of the demo
        cells = []
    for spec in api.options().get("models") or []:
        cells.append(param(spec, name="model", kind="model", spec=spec))
    return cells


@probe(family="aoti", name="package", params=_cells, timeout=600)
def package(ctx: Any, kind: str, dtype: str = "fp32", spec: str | None = None,
            device: str = "cpu") -> None:
    """export -> package (.pt2) -> load fresh + warm -> compare heads -> latency."""
    try:
        import torch
    except ImportError as exc:
        ctx.skip(f"torch not installed ({exc}): pip install 'laya-tui[torch]'")
    from laya_tui.families.aoti.pipeline import run_target
    from laya_tui.families.aoti.targets import decision_target, user_target

    if kind == "decision":
        try:
            import transformers  # noqa: F401
        except ImportError as exc:
            ctx.skip(f"transformers not installed ({exc}): pip install 'laya-tui[torch]'")
        if device == "cuda" and not torch.cuda.is_available():
            ctx.skip("no CUDA device here: the cuda package is built and compared on a GPU "
                     "host (bash scripts/gpu-report.sh)")
        target = decision_target(dtype, device=device)
    else:
        from laya_tui.families.presets import load_user_model

        try:
            loaded = load_user_model(str(spec))
        except Exception as exc:  # noqa: BLE001 - a broken --model could not be examined
            ctx.error(f"--model {spec}: {type(exc).__name__}: {exc}".splitlines()[0])
        where = _user_device(ctx)  # after the import: a broken model is an error anywhere
        try:
            target = user_target(str(spec), device=where, loaded=loaded)
        except Exception as exc:  # noqa: BLE001 - a broken --model could not be examined
            ctx.error(f"--model {spec}: {type(exc).__name__}: {exc}".splitlines()[0])
    run_target(ctx, target, ctx.options.get("out"))


def _user_device(ctx: Any) -> str:
    """``--device`` for a ``--model`` package: cpu (the default) or cuda[:N]; a device this
    host lacks, or one AOTInductor does not package for, is a skip with the reason."""
    dev = str(ctx.options.get("device") or "cpu")
    if dev == "cpu":
        return dev
    if not dev.startswith("cuda"):
        ctx.skip(f"--device {dev}: AOTInductor packages models for cpu or cuda only")
    from laya_tui.families.presets import device_unavailable

    why = device_unavailable(dev)
    if why is not None:
        ctx.skip(why)
    return dev
