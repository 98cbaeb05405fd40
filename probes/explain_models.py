"""explain probes: model forwards inside explain regions, compared with an fp32 CPU reference.

Cells ``explain/<preset>[<dtype>,<scenario>]`` for the tiny ModernBERT encoder and the tiny
Llama causal LM, in fp32 and bf16 (fp16 on an RBLN host, where the model runs on the
``rbln`` device inside ``torch.rbln.explain``), each scenario a cold and a warm region
(:func:`laya_tui.regions.explain_steady`):

- ``eager``: the same prompt batch twice; shows casts, host syncs, CPU ops on a device.
- ``compile-two-lengths``: ``torch.compile``; cold = width 7, warm = width 9: the warm
  region shows the recompile and its guard-failure reason.
- ``compile-padded``: the same two batches padded to one width: the warm region shows none.
- ``host-decode`` (tiny Llama only): a 3-step greedy decode written the common hand-made
  way (:func:`laya_tui.presets.host_greedy_decode`): last-position logits to the host with
  ``.float().cpu()``, softmax/argmax and the EOS check on CPU tensors, the attention mask
  extended on the host and moved back with ``.to(device)``. On a device this shows real
  d2h/h2d copies with bytes and call sites, and the host ops as CPU fallbacks; the last
  forward's logits are compared with the fp32 CPU reference on the same (teacher-forced)
  sequence.

Plus ``explain/model:<module:callable>[eager|compile]`` per ``--model`` spec, and
``explain/rbln_log`` when ``--rbln-log PATH`` is given. Heavy imports stay in functions.
"""

from __future__ import annotations

import os
from typing import Any

from laya_tui import param, probe
from laya_tui.api import options

PRESETS = ("tiny_llama", "tiny_modernbert")
DTYPES = ("fp32", "bf16")
SCENARIOS = ("eager", "compile-two-lengths", "compile-padded")
#: Scenarios of one preset only: the host-side decode loop needs a causal LM.
PRESET_SCENARIOS = {"tiny_llama": ("host-decode",)}
#: Two prompt batches of different widths (row lengths), and the width padding buckets to.
BATCH_A, BATCH_B, PAD_TO = [7, 5], [9, 6], 16
#: host-decode: the prompt rows (one length: the loop does not shift padded positions), steps.
DECODE_ROWS, DECODE_STEPS = [7, 7], 3
#: max |diff| limits against the fp32 CPU reference, per dtype.
LIMITS = {"fp32": 1e-4, "bf16": 0.05, "fp16": 0.05}
TORCH_HINT = "pip install 'laya-tui[torch]'"


def _on_rbln_host() -> bool:
    """torch-rbln with a loadable runtime (answered without importing torch)."""
    from laya_tui.rbln_status import runtime_reason, torch_rbln_installed

    return torch_rbln_installed() and runtime_reason() is None


def _dtypes() -> tuple[str, ...]:
    """fp32 and a half type: fp16 on an RBLN host (its device dtype), bf16 elsewhere."""
    return ("fp32", "fp16") if _on_rbln_host() else DTYPES


def _cells() -> list[Any]:
    opts = options()
    presets = PRESETS if opts.get("demo", True) else ()  # the presets are the demo
    cells = [param(f"{dt},{sc}", name=preset, preset=preset, dtype=dt, scenario=sc)
             for preset in presets for dt in _dtypes()
             for sc in SCENARIOS + PRESET_SCENARIOS.get(preset, ())]
    for spec in opts.get("models") or []:
        for sc in ("eager", "compile"):
            cells.append(param(sc, name=f"model:{spec}", spec=spec, scenario=sc))
    return cells


def _log_cells() -> list[Any]:
    path = options().get("rbln_log")
    return [param("log", name="rbln_log", path=path)] if path else []


def _torch(ctx: Any) -> Any:
    try:
        import torch
        import transformers  # noqa: F401 - the presets are transformers models
    except ImportError as exc:
        ctx.skip(f"torch/transformers not installed ({exc}): {TORCH_HINT}")
    return torch


def _device(torch: Any, ctx: Any) -> str:
    dev = ctx.options.get("device")
    if dev:
        return str(dev)
    from laya_tui.regions.rbln import device_reason

    if _on_rbln_host() and device_reason() is None:  # runtime loads and an NPU is there
        return "rbln"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _dtype(torch: Any, name: str) -> Any:
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def _to(batch: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) for k, v in batch.items()}


def _output(result: Any) -> tuple[str, Any]:
    """(name, tensor) of a model output: logits, last_hidden_state, or the first tensor."""
    for name in ("logits", "last_hidden_state"):
        value = getattr(result, name, None)
        if value is not None:
            return name, value
    if isinstance(result, (tuple, list)):
        return "output[0]", result[0]
    if isinstance(result, dict):
        key = next(iter(result))
        return str(key), result[key]
    return "output", result


def _compare(ctx: Any, subject: str, out: Any, ref: Any, limit: float, mask: Any = None) -> None:
    from laya_tui.tolerance import compare_logits

    name_out, t_out = _output(out)
    _, t_ref = _output(ref)
    t_out = t_out.detach().float().cpu()
    if name_out == "logits":
        compare_logits(ctx, f"{subject} logits", t_out, t_ref, atol=limit, mask=mask)
    else:
        m = None if mask is None else mask[..., None]
        ctx.compare(f"{subject} {name_out}", t_out, t_ref, atol=limit, mask=m)


@probe(family="explain", name="model", params=_cells, timeout=300)
def explain_model(ctx: Any, preset: str | None = None, dtype: str = "fp32",
                  scenario: str = "eager", spec: str | None = None) -> None:
    """One preset x dtype x scenario (or one ``--model`` spec) inside explain regions."""
    if spec is not None:
        _user_model(ctx, spec, scenario)
        return
    if _on_rbln_host():  # the runtime's fallback log, read by the RBLN region
        os.environ.setdefault("TORCH_RBLN_LOG_LEVEL", "INFO")
    torch = _torch(ctx)
    from laya_tui import presets
    from laya_tui.regions import explain_steady

    device = _device(torch, ctx)
    build = getattr(presets, str(preset))
    model = build(_dtype(torch, dtype)).to(device)
    reference = build(None)
    if scenario == "host-decode":
        _host_decode(ctx, torch, str(preset), model, reference, device, dtype)
        return
    pad = PAD_TO if scenario == "compile-padded" else None
    batches = [presets.token_batch(rows, pad_to=pad) for rows in (BATCH_A, BATCH_B)]
    inputs = [_to(b, device) for b in batches]
    backend = str(ctx.options.get("explain_backend")
                  or ("rbln" if device.startswith("rbln") else "inductor"))
    ctx.environment("explain.model", preset, detail={
        "dtype": dtype, "device": device, "scenario": scenario, "widths":
        [int(b["input_ids"].shape[1]) for b in batches],
        "compile_backend": backend if scenario.startswith("compile") else None})

    fn = model
    if scenario.startswith("compile"):
        torch._dynamo.reset()  # a fresh cache: earlier cells compiled other instances
        fn = torch.compile(model, backend=backend, dynamic=False)
    results: dict[int, Any] = {}

    def call(i: int) -> Any:
        with torch.no_grad():
            results[i] = fn(**inputs[i])
        return results[i]

    first, later = (0, 0) if scenario == "eager" else (0, 1)
    explain_steady(ctx, "forward", lambda: call(first), warm_fn=lambda: call(later),
                   warmup=2 if scenario == "eager" else 1, model=model)
    with torch.no_grad():
        for i in sorted(results):
            ref = reference(**batches[i])
            mask = batches[i]["attention_mask"].bool()
            width = int(batches[i]["input_ids"].shape[1])
            _compare(ctx, f"width={width}", results[i], ref, LIMITS[dtype], mask)
    if scenario.startswith("compile"):
        torch._dynamo.reset()


def _host_decode(ctx: Any, torch: Any, preset: str, model: Any, reference: Any, device: str,
                 dtype: str) -> None:
    """The ``host-decode`` scenario: the decode loop in a cold and a warm region."""
    from laya_tui import presets
    from laya_tui.regions import explain_steady

    batch = presets.token_batch(DECODE_ROWS)
    ctx.environment("explain.model", preset, detail={
        "dtype": dtype, "device": device, "scenario": "host-decode",
        "widths": [int(batch["input_ids"].shape[1])], "steps": DECODE_STEPS,
        "compile_backend": None})
    box: list[Any] = []

    def decode() -> Any:
        box[:] = [presets.host_greedy_decode(model, batch, steps=DECODE_STEPS, device=device)]
        return box[0]

    explain_steady(ctx, "decode", decode, warmup=2, model=model)
    result = box[0]
    width = int(result.logits.shape[1])
    ids, mask = result.ids[:, :width], result.mask[:, :width]
    with torch.no_grad():
        ref = reference(input_ids=ids, attention_mask=mask)
    ctx.log(f"host decode: {int(result.ids.shape[1]) - DECODE_ROWS[0]} token(s) generated",
            subject="decode", detail={"generated": result.ids[:, DECODE_ROWS[0]:].tolist()})
    _compare(ctx, f"decode last step width={width}", result, ref, LIMITS[dtype], mask.bool())


def _user_model(ctx: Any, spec: str, scenario: str) -> None:
    torch = _torch(ctx)
    import copy

    from laya_tui.presets import load_user_model
    from laya_tui.regions import explain_steady

    try:
        model, inputs = load_user_model(spec)
    except (ValueError, ImportError, AttributeError, TypeError) as exc:
        ctx.fail(f"--model {spec}: {type(exc).__name__}: {exc}")
    ctx.depends_on(__file__)
    param0 = next(iter(model.parameters()), None)
    dtype = param0.dtype if param0 is not None else torch.float32
    reference = copy.deepcopy(model).float().cpu().eval()

    def cpu32(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.cpu().float() if x.is_floating_point() else x.cpu()
        return x

    def call_with(m: Any, x: Any) -> Any:
        with torch.no_grad():
            if isinstance(x, dict):
                return m(**x)
            if isinstance(x, (tuple, list)):
                return m(*x)
            return m(x)

    ref_inputs = ({k: cpu32(v) for k, v in inputs.items()} if isinstance(inputs, dict) else
                  [cpu32(v) for v in inputs] if isinstance(inputs, (tuple, list)) else
                  cpu32(inputs))
    fn = model
    if scenario == "compile":
        torch._dynamo.reset()
        fn = torch.compile(model, backend=str(ctx.options.get("explain_backend") or "inductor"))
    box: list[Any] = []
    explain_steady(ctx, "forward", lambda: box.append(call_with(fn, inputs)), warmup=2,
                   model=model)
    name = str(dtype).removeprefix("torch.")
    limit = {"float32": LIMITS["fp32"], "bfloat16": LIMITS["bf16"],
             "float16": LIMITS["fp16"]}.get(name, LIMITS["bf16"])
    _compare(ctx, f"{name} vs fp32 cpu", box[-1], call_with(reference, ref_inputs),
             float(ctx.options.get("explain_atol") or limit))


@probe(family="explain", name="rbln_log", params=_log_cells, timeout=60)
def rbln_fallback_log(ctx: Any, path: str) -> None:
    """The RBLN runtime's fallback log (``--rbln-log PATH``) as fallback signals."""
    from laya_tui.regions.aggregate import Aggregator
    from laya_tui.regions.rbln_log import merge_log, parse_log

    ctx.depends_on(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        ctx.fail(f"cannot read RBLN log {path}: {exc.strerror or exc}")
    records = parse_log(text)
    agg = merge_log(Aggregator(), records)
    for entry in agg:
        ctx.signal(entry.kind, **entry.fields())
    fallbacks = [r for r in records if r.kind in ("fallback", "compile_fallback")]
    ctx.log(f"RBLN fallback log: {sum(r.count for r in fallbacks)} fallback line(s), "
            f"{len(fallbacks)} distinct op/reason", subject=path,
            detail={"lines": len(text.splitlines()), "path": path})
