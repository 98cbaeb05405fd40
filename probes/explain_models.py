"""explain probes: model forwards inside explain regions, compared with an fp32 CPU reference.

Cells ``explain/<preset>[<dtype>,<scenario>]`` for the tiny ModernBERT encoder and the tiny
Llama causal LM, in fp32 and bf16 (fp16 on an RBLN host, where the model runs on the
``rbln`` device inside ``torch.rbln.explain``), each scenario a cold and a warm region
(:func:`laya_tui.families.explain.explain_steady`):

- ``eager``: the same prompt batch twice; shows casts, host syncs, CPU ops on a device.
- ``compile-two-lengths``: ``torch.compile``; cold = width 7, warm = width 9: the warm
  region shows the recompile and its guard-failure reason.
- ``compile-padded``: the same two batches padded to one width: the warm region shows none.
  Its two compared outputs are named by width and rows (``width=16 rows=7,5 logits``).
- ``host-decode`` (tiny Llama only): a 3-step greedy decode written the common hand-made
  way (:func:`laya_tui.presets.host_greedy_decode`): last-position logits to the host with
  ``.float().cpu()``, softmax/argmax and the EOS check on CPU tensors, the attention mask
  extended on the host and moved back with ``.to(device)``. On a device this shows real
  d2h/h2d copies with bytes and call sites, and the host ops as CPU fallbacks; the last
  forward's logits are compared with the fp32 CPU reference on the same (teacher-forced)
  sequence.

Every compared output also says where its drift starts: each module's output against the
fp32 CPU reference in execution order (:mod:`laya_tui.families.explain.drift`), in the tolerance
signal's ``detail.drift`` and a JSON artifact. A failing bf16/fp16 eager comparison is
followed by the gap table (:mod:`laya_tui.families.explain.gap_table`: each module's error
and its own error, ``detail.gap_table``; for a passing cell too with ``--numerics``) and the
precision plan search (:mod:`laya_tui.families.explain.precision_plan`, starting from the
gap table's ranking): the modules to keep in fp32, verified by a re-run, as a ``log`` signal with
``detail.precision_plan`` and the snippet in ``fix``.

Plus ``explain/model:<module:callable>[eager|compile]`` per ``--model`` spec (the factory
returns ``(model, inputs)``, inputs one input set or a list of them: eager runs each, compile
runs them in order so their shapes' recompiles show; the model and every set go to
``--device``, the fp32 reference stays on the CPU; a factory that cannot be imported or
raises is status ``error``), and
``explain/rbln_log`` when ``--rbln-log PATH`` is given. Heavy imports stay in functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
    from laya_tui.families.rbln_status import runtime_reason, torch_rbln_installed

    return torch_rbln_installed() and runtime_reason() is None


def _dtypes() -> tuple[str, ...]:
    """fp32 and a half type: fp16 on an RBLN host (its device dtype), bf16 elsewhere."""
    return ("fp32", "fp16") if _on_rbln_host() else DTYPES


def _cells() -> list[Any]:
    opts = options()
    presets = PRESETS if opts.get("demo", True) else ()  # the presets are the demo
    dtypes = _dtypes()  # asks torch-rbln's runtime lookup once, not once per preset
    cells = [param(f"{dt},{sc}", name=preset, preset=preset, dtype=dt, scenario=sc)
             for preset in presets for dt in dtypes
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
    """``--device`` (skipped with the reason when absent here), else the accelerator."""
    dev = ctx.options.get("device")
    if dev:
        from laya_tui.presets import device_unavailable

        why = device_unavailable(str(dev))
        if why is not None:
            ctx.skip(why)
        return str(dev)
    from laya_tui.families.explain.rbln import device_reason

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


def _compare(ctx: Any, subject: str, out: Any, ref: Any, limit: float, mask: Any = None,
             drift: dict[str, Any] | None = None, plan: dict[str, Any] | None = None,
             compiled: Callable[[], Any] | None = None,
             gap: dict[str, Any] | None = None) -> None:
    """The tolerance verdict; when it fails and ``plan`` holds ``model``, ``reference``,
    ``forward`` and ``forward_reference``, the gap table and the precision plan search
    follow it; when it fails and ``compiled`` compiles and runs the model afresh, torch's
    compiler bisector, and with ``gap`` (``plan``'s keys and ``path``) the gap table of the
    model compiled module by module."""
    from laya_tui.families.numeric import max_abs_diff
    from laya_tui.tolerance import compare_logits, logits_verdict

    name_out, t_out = _output(out)
    _, t_ref = _output(ref)
    t_out = t_out.detach().float().cpu()
    t_ref = t_ref.detach().float().cpu()
    extra = {"detail": {"drift": drift}} if drift else {}
    m = None if mask is None or t_out.dim() <= mask.dim() else mask[..., None]
    if name_out == "logits":
        sig = compare_logits(ctx, f"{subject} logits", t_out, t_ref, atol=limit, mask=mask,
                             **extra)
    else:
        sig = ctx.compare(f"{subject} {name_out}", t_out, t_ref, atol=limit, mask=m, **extra)

    def check(o: Any) -> tuple[float, bool]:  # the verdict above, on a plan run's output
        t = _output(o)[1].detach().float().cpu()
        if name_out == "logits":
            v = logits_verdict(t, t_ref, atol=limit, mask=mask)
            return float(v["value"]), bool(v["passed"])
        value = max_abs_diff(t, t_ref, mask=m)[0]
        return value, value <= limit

    if compiled is not None:
        from laya_tui.families.explain.compile_bisect import bisect_after_verdict

        bisect_after_verdict(ctx, f"{subject} {name_out}", sig, run_compiled=compiled,
                             good=lambda o: check(o)[1])
    from laya_tui.families.explain.gap_table import table_after_verdict

    if gap is not None:
        table_after_verdict(ctx, f"{subject} {name_out}", sig, mask=mask, **gap)
    if plan is None:
        return
    table = table_after_verdict(ctx, f"{subject} {name_out}", sig, mask=mask, **plan)

    from laya_tui.families.explain.gap_table import ranking
    from laya_tui.families.explain.precision_plan import plan_after_verdict

    plan_after_verdict(ctx, f"{subject} {name_out}", sig, check=check, drift=drift,
                       mask=mask, ranking=ranking(table) if table is not None else None,
                       **plan)


def _drift(ctx: Any, subject: str, model: Any, reference: Any, run_model: Any,
           run_reference: Any, mask: Any = None) -> tuple[Any, dict[str, Any] | None]:
    """Per-module drift of ``model`` against ``reference`` (hooks); returns the reference's
    output and the tolerance detail's ``drift`` entry (with an artifact)."""
    from laya_tui.families.explain import drift as d

    try:
        result = d.module_drift(model, reference, run_model, run_reference, mask=mask)
    except Exception as exc:  # noqa: BLE001 - attribution must never hide the comparison
        ctx.log(f"drift attribution failed: {type(exc).__name__}: {exc}"[:300], subject=subject)
        return run_reference(), None
    d.emit_divergence(ctx, subject, result)  # another path than fp32: said first
    path = d.write_artifact(result, d.artifact_folder(ctx.options), f"{ctx.id}-{subject}")
    ctx.artifact(f"{subject}: per-module drift", path,
                 detail={"compared": result["compared"], "first_past_limit":
                         (result["first_past_limit"] or {}).get("module")})
    return result["reference_output"], d.summary_detail(result, path)


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
    from laya_tui.families.explain import explain_steady

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
            mask = batches[i]["attention_mask"].bool()
            width = int(batches[i]["input_ids"].shape[1])
            subject = f"width={width}"
            if pad is not None:  # both batches padded to one width: their rows tell them apart
                subject += f" rows={','.join(map(str, (BATCH_A, BATCH_B)[i]))}"
            ref, drift = _drift(ctx, subject, model, reference,
                                lambda i=i: model(**inputs[i]),
                                lambda i=i: reference(**batches[i]), mask)
            plan = None if scenario != "eager" else {  # eager first (issue 43)
                "model": model, "reference": reference,
                "forward": lambda m, i=i: m(**inputs[i]),
                "forward_reference": lambda m, i=i: m(**batches[i])}
            compiled = None if not scenario.startswith("compile") or backend != "inductor" \
                else (lambda i=i: torch.compile(model, dynamic=False)(**inputs[i]))
            gap = None if compiled is None else {  # compiled module by module (issue 43)
                "model": model, "reference": reference, "path": "compile",
                "forward": lambda m, i=i: m(**inputs[i]),
                "forward_reference": lambda m, i=i: m(**batches[i])}
            _compare(ctx, subject, results[i], ref, LIMITS[dtype], mask, drift, plan,
                     compiled, gap)
    if scenario.startswith("compile"):
        torch._dynamo.reset()


def _host_decode(ctx: Any, torch: Any, preset: str, model: Any, reference: Any, device: str,
                 dtype: str) -> None:
    """The ``host-decode`` scenario: the decode loop in a cold and a warm region."""
    from laya_tui import presets
    from laya_tui.families.explain import explain_steady

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
    subject = f"decode last step width={width}"
    ref, drift = _drift(ctx, subject, model, reference,
                        lambda: model(input_ids=ids.to(device), attention_mask=mask.to(device)),
                        lambda: reference(input_ids=ids, attention_mask=mask), mask.bool())
    ctx.log(f"host decode: {int(result.ids.shape[1]) - DECODE_ROWS[0]} token(s) generated",
            subject="decode", detail={"generated": result.ids[:, DECODE_ROWS[0]:].tolist()})
    _compare(ctx, subject, result, ref, LIMITS[dtype], mask.bool(), drift, {
        "model": model, "reference": reference,
        "forward": lambda m: m(input_ids=ids.to(device), attention_mask=mask.to(device)),
        "forward_reference": lambda m: m(input_ids=ids, attention_mask=mask)})


def _user_model(ctx: Any, spec: str, scenario: str) -> None:
    """A ``--model`` factory's model on ``--device`` over each of its input sets."""
    torch = _torch(ctx)
    import copy

    from laya_tui import presets
    from laya_tui.families.explain import explain_steady
    from laya_tui.families.explain.dynamo_watch import set_call_label

    ctx.depends_on(__file__)
    _depend_on_module(ctx, spec)
    try:
        model, inputs = presets.load_user_model(spec)
        sets = presets.input_sets(inputs)
    except Exception as exc:  # noqa: BLE001 - any failure to build is "could not examine"
        ctx.error(f"--model {spec}: {type(exc).__name__}: {exc}".splitlines()[0][:500])
    if not isinstance(model, torch.nn.Module):
        ctx.error(f"--model {spec}: the factory returned {type(model).__name__}, not a "
                  "torch.nn.Module")
    device = _device(torch, ctx)
    model.eval()
    param0 = next(iter(model.parameters()), None)
    dtype = param0.dtype if param0 is not None else torch.float32
    reference = copy.deepcopy(model).float().cpu().eval()  # the fp32 reference, on the CPU
    model = model.to(device)
    on_dev = [presets.move(x, device) for x in sets]
    on_cpu = [presets.move(x, "cpu", fp32=True) for x in sets]
    name = str(dtype).removeprefix("torch.")
    ctx.environment("explain.model", spec, detail={
        "dtype": name, "device": device, "scenario": scenario, "input_sets": len(sets),
        "shapes": [_shapes(x) for x in sets]})
    fn = model
    if scenario == "compile":
        torch._dynamo.reset()
        fn = torch.compile(model, backend=str(ctx.options.get("explain_backend") or "inductor"))
    outs: dict[int, Any] = {}

    def run(i: int) -> Any:
        set_call_label(f"input set {i + 1} of {len(sets)}: {_shapes(sets[i])}")
        try:
            with torch.no_grad():
                outs[i] = presets.call_with(fn, on_dev[i])
        finally:
            set_call_label(None)
        return outs[i]

    def run_all(indices: range) -> None:
        for i in indices:
            run(i)

    if scenario == "compile":
        # set 1 compiles; the later sets, in order, show the recompiles their shapes cause
        later = (lambda: run_all(range(1, len(sets)))) if len(sets) > 1 else None
        try:
            explain_steady(ctx, "forward", lambda: run(0), warm_fn=later, warmup=1,
                           model=model)
        except Exception as exc:
            _fail_on_missing_fake(ctx, exc)
            raise
    else:
        explain_steady(ctx, "forward", lambda: run_all(range(len(sets))), warmup=2,
                       model=model)
    limit = float(ctx.options.get("explain_atol") or {
        "float32": LIMITS["fp32"], "bfloat16": LIMITS["bf16"],
        "float16": LIMITS["fp16"]}.get(name, LIMITS["bf16"]))
    for i in range(len(sets)):
        subject = f"{name} vs fp32 cpu" if len(sets) == 1 else \
            f"set {i + 1}/{len(sets)} {name} vs fp32 cpu"
        ref, drift = _drift(ctx, subject, model, reference,
                            lambda i=i: presets.call_with(model, on_dev[i]),
                            lambda i=i: presets.call_with(reference, on_cpu[i]))
        plan = None if scenario != "eager" else {  # eager first (issue 43)
            "model": model, "reference": reference,
            "forward": lambda m, i=i: presets.call_with(m, on_dev[i]),
            "forward_reference": lambda m, i=i: presets.call_with(m, on_cpu[i])}
        backend = str(ctx.options.get("explain_backend") or "inductor")
        compiled = None if scenario != "compile" or backend != "inductor" else (
            lambda i=i: presets.call_with(torch.compile(model), on_dev[i]))
        gap = None if compiled is None else {  # compiled module by module (issue 43)
            "model": model, "reference": reference, "path": "compile",
            "forward": lambda m, i=i: presets.call_with(m, on_dev[i]),
            "forward_reference": lambda m, i=i: presets.call_with(m, on_cpu[i])}
        _compare(ctx, subject, outs[i], ref, limit, drift=drift, plan=plan, compiled=compiled,
                 gap=gap)
    if scenario == "compile":
        torch._dynamo.reset()


def _fail_on_missing_fake(ctx: Any, exc: BaseException) -> None:
    """A custom op without a fake is a finding naming the op, torch's GB id and the line."""
    from laya_tui.families.aoti.failure import missing_fake

    fake = missing_fake(f"{type(exc).__name__}: {exc}")
    if fake is None:
        return
    ctx.log(fake["reason"], subject=f"forward: {fake['op']}", site=fake["site"],
            fix=f"register a fake impl: @{fake['register']}",
            detail={"missing_fake": {k: fake[k] for k in ("op", "gb", "register")},
                    "exception": type(exc).__name__})
    ctx.fail(fake["reason"])


def _shapes(inputs: Any) -> str:
    """``x(4, 16)`` / ``x(2, 5), mode='sum', normalize=True``: an input set's shapes and its
    non-tensor inputs (which change what the model computes, and what an export bakes in)."""
    if isinstance(inputs, dict):
        items = list(inputs.items())
    elif isinstance(inputs, (tuple, list)):
        items = [(f"arg{i}", v) for i, v in enumerate(inputs)]
    else:
        items = [("x", inputs)]
    parts = [f"{k}{tuple(v.shape)}" if hasattr(v, "shape") else f"{k}={v!r}"
             for k, v in items if hasattr(v, "shape") or isinstance(v, (str, bool, int, float))]
    if not any(hasattr(v, "shape") for _, v in items):
        parts.insert(0, "no tensors")
    return ", ".join(parts)


def _depend_on_module(ctx: Any, spec: str) -> None:
    """Watch/cache: the factory's module file is a dependency (when it can be found)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(spec.partition(":")[0])
    except (ImportError, ValueError):
        return
    if found is not None and found.origin and os.path.isfile(found.origin):
        ctx.depends_on(found.origin)


@probe(family="explain", name="rbln_log", params=_log_cells, timeout=60)
def rbln_fallback_log(ctx: Any, path: str) -> None:
    """The RBLN runtime's fallback log (``--rbln-log PATH``) as fallback signals."""
    from laya_tui.families.explain.aggregate import Aggregator
    from laya_tui.families.explain.rbln_log import merge_log, parse_log

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
