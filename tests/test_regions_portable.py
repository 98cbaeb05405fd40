"""The portable explain region on real tiny models (stock PyTorch, CPU here, CUDA if present)."""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any

import pytest

from laya_tui.core.protocol import SignalEvent

pytest.importorskip("torch")
import torch  # noqa: E402

pytest.importorskip("transformers")

from laya_tui.api import Context  # noqa: E402
from laya_tui.families import presets  # noqa: E402
from laya_tui.families.explain import explain_steady, open_region  # noqa: E402
from laya_tui.families.explain.portable import PortableRegion  # noqa: E402

HERE = __file__


def _ctx():
    events: list[SignalEvent] = []
    return Context("explain/test", "explain", events.append, opts={}), events


def _sigs(events, kind=None):
    out = [e["signal"] for e in events if e["type"] == "signal"]
    return [s for s in out if kind is None or s["kind"] == kind]


def _line_of(func, needle: str) -> int:
    lines, start = inspect.getsourcelines(func)
    start = max(start, 1)  # 0 for a module, whose first line is 1
    hits = [start + i for i, text in enumerate(lines) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def _this_line(needle: str) -> int:
    return _line_of(sys.modules[__name__], needle)


def test_bf16_llama_casts_at_its_norm_call_sites():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    up_line = _line_of(LlamaRMSNorm.forward, "hidden_states.to(torch.float32)")
    down_line = _line_of(LlamaRMSNorm.forward, "hidden_states.to(input_dtype)")
    model = presets.tiny_llama(torch.bfloat16)
    batch = presets.token_batch([7, 5])
    ctx, events = _ctx()
    with torch.no_grad(), ctx.explain("forward", model=model) as region:
        model(**batch)
    norms = 2 * presets.LLAMA_CONFIG["num_hidden_layers"] + 1
    casts = {(s["reason"], s["site"]["line"]): s for s in _sigs(events, "cast")
             if s["site"]["file"].endswith("modeling_llama.py")}
    up = casts[("upcast bfloat16->float32", up_line)]
    down = casts[("downcast float32->bfloat16", down_line)]
    hidden = 2 * 7 * presets.LLAMA_CONFIG["hidden_size"]
    assert (up["count"], up["bytes"]) == (norms, norms * hidden * 4)
    assert (down["count"], down["bytes"]) == (norms, norms * hidden * 2)
    # the function qualified by its class, as the code object names it
    qual = LlamaRMSNorm.forward.__code__.co_qualname
    assert qual == "LlamaRMSNorm.forward"
    assert up["subject"] == "aten::_to_copy" and up["site"]["func"] == qual
    assert up["fix"] and up["detail"]["from"] == "bfloat16" and up["detail"]["to"] == "float32"
    assert up["detail"]["stack"][0].endswith(f"modeling_llama.py:{up_line}({qual})")
    # the full user stack: the norm inside the decoder layer inside the model, then this test
    assert any("(LlamaDecoderLayer.forward)" in f for f in up["detail"]["stack"])
    assert any(f.startswith("tests/test_regions_portable.py:") or HERE in f
               for f in up["detail"]["stack"])
    assert not any("laya_tui" in f for f in up["detail"]["stack"])
    # one signal per (kind, subject, reason, site), never one per op call
    keys = [(s["kind"], s["subject"], s["reason"], s["site"]["file"], s["site"]["line"])
            for s in _sigs(events, "cast")]
    assert len(keys) == len(set(keys))
    assert len(region.entries) == len(_sigs(events, "cast"))


def test_fp32_llama_has_no_float_casts():
    model = presets.tiny_llama()
    ctx, events = _ctx()
    with torch.no_grad(), ctx.explain("forward", model=model):
        model(**presets.token_batch([7]))
    assert not [s for s in _sigs(events, "cast") if "bfloat16" in s["reason"]]


def test_cpu_region_says_no_device_instead_of_a_silent_zero():
    model = presets.tiny_modernbert()
    ctx, events = _ctx()
    with torch.no_grad(), ctx.explain("forward", model=model):
        out = model(**presets.token_batch([7]))
        out.last_hidden_state.sum().item()
    bounces = _sigs(events, "host_bounce")
    assert len(bounces) == 1
    assert bounces[0]["count"] == 0 and bounces[0]["reason"].startswith("no device in region")
    assert bounces[0]["detail"]["cpu_scalar_reads"] >= 1
    wall = next(s for s in _sigs(events, "timing") if s["subject"] == "forward: region wall")
    assert wall["seconds"] > 0


def test_device_region_reports_cpu_ops_and_host_to_device_copies():
    """The meta device stands in for an accelerator: real ops, no GPU needed."""
    ctx, events = _ctx()
    with ctx.explain("step", device="meta"):
        x = torch.ones(4, 8)  # created on the host in a device region
        y = x * 2  # marker: cpu op
        y.to("meta")  # marker: h2d
    fallbacks = _sigs(events, "fallback")
    mul = next(s for s in fallbacks if s["subject"] == "aten::mul.Tensor")
    assert mul["site"] == {"file": HERE, "line": _this_line("marker:" + " cpu op"),
                           "func": "test_device_region_reports_cpu_ops_and_host_to_device_copies"}
    assert mul["reason"] == "ran on CPU in a meta region" and mul["count"] == 1
    h2d = next(s for s in _sigs(events, "host_bounce") if s["subject"] == "aten::_to_copy")
    assert h2d["detail"]["direction"] == "h2d" and h2d["bytes"] == 4 * 8 * 4
    assert h2d["site"]["line"] == _this_line("marker:" + " h2d")
    assert not [s for s in _sigs(events, "host_bounce") if s["count"] == 0]  # a device region


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
def test_item_on_cuda_is_a_host_bounce():
    ctx, events = _ctx()
    x = torch.ones(16, device="cuda")
    with ctx.explain("step", device="cuda"):
        x.sum().item()
    sync = next(s for s in _sigs(events, "host_bounce")
                if s["subject"] == "aten::_local_scalar_dense")
    assert sync["count"] == 1 and sync["detail"]["direction"] == "d2h"
    assert sync["bytes"] == 4 and sync["site"]["file"] == HERE


def test_host_greedy_decode_grows_by_steps_and_matches_the_reference():
    """The decode loop itself, on the CPU: ids grow by ``steps``, each chosen token is the
    reference's argmax at the previous position, the last forward's logits match."""
    from laya_tui.families.tolerance import logits_verdict

    batch = presets.token_batch([7, 7])
    reference = presets.tiny_llama()
    for dtype, limit in ((torch.float32, 1e-4), (torch.bfloat16, 0.05)):
        res = presets.host_greedy_decode(presets.tiny_llama(dtype), batch, steps=3, device="cpu")
        assert res.ids.shape == (2, 10) and res.mask.shape == (2, 10)
        assert torch.equal(res.ids[:, :7], batch["input_ids"]) and bool(res.mask.all())
        assert res.logits.shape == (2, 9, presets.LLAMA_CONFIG["vocab_size"])
        assert res.logits.dtype == dtype and res.ids.device.type == "cpu"
        with torch.no_grad():
            ref = reference(input_ids=res.ids[:, :9], attention_mask=res.mask[:, :9]).logits
        v = logits_verdict(res.logits.float(), ref, atol=limit)
        assert v["passed"], v
        if dtype == torch.float32:  # greedy: token t+1 is the argmax at position t
            assert torch.equal(res.ids[:, 7:], ref[:, 6:].argmax(-1))


def test_host_greedy_decode_stops_at_eos():
    model, batch = presets.tiny_llama(), presets.token_batch([7])
    first = int(presets.host_greedy_decode(model, batch, steps=1).ids[0, -1].item())
    res = presets.host_greedy_decode(model, batch, steps=3, eos_token_id=first)
    assert res.ids.shape == (1, 8) and res.logits.shape[1] == 7


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
def test_host_decode_on_cuda_shows_real_bounces_and_cpu_ops():
    """The host-decode scenario's loop on a GPU: the ``.float().cpu()`` d2h copy, the
    host-built ids/mask going back (h2d), and the host ops as CPU fallbacks, with bytes
    and the decode function's lines as call sites."""
    steps, rows, vocab = 3, 2, presets.LLAMA_CONFIG["vocab_size"]
    model = presets.tiny_llama(torch.bfloat16).to("cuda")
    batch = presets.token_batch([7] * rows)
    ctx, events = _ctx()
    with ctx.explain("decode", model=model):
        presets.host_greedy_decode(model, batch, steps=steps, device="cuda")
    mine = presets.__file__
    fn = presets.host_greedy_decode
    bounces = {(s["detail"]["direction"], s["site"]["line"]): s
               for s in _sigs(events, "host_bounce") if s["site"]["file"] == mine}
    d2h = bounces[("d2h", _line_of(fn, "last = logits[:, -1, :].float().cpu()"))]
    assert d2h["subject"] == "aten::_to_copy" and d2h["count"] == steps
    assert d2h["bytes"] == steps * rows * vocab * 4
    ids_h2d = bounces[("h2d", _line_of(fn, "next_ids[:, None].to(dev)"))]
    assert ids_h2d["count"] == steps and ids_h2d["bytes"] == steps * rows * 8
    mask_h2d = bounces[("h2d", _line_of(fn, "mask_dev = mask.to(dev)"))]
    widths = range(8, 8 + steps)
    assert mask_h2d["count"] == steps and mask_h2d["bytes"] == sum(rows * w * 8 for w in widths)
    prompt = bounces[("h2d", _line_of(fn, "ids_dev, mask_dev = ids.to(dev), mask.to(dev)"))]
    assert prompt["count"] == 2 and prompt["bytes"] == 2 * rows * 7 * 8
    cpu_ops = {s["subject"]: s for s in _sigs(events, "fallback") if s["site"]["file"] == mine}
    for op, needle in (("aten::_softmax", "torch.softmax(last"),
                       ("aten::argmax", "torch.argmax(probs"),
                       ("aten::ones", "torch.ones((mask.shape[0], 1)")):
        assert cpu_ops[op]["count"] == steps, (op, cpu_ops)
        assert cpu_ops[op]["site"]["line"] == _line_of(fn, needle)
        assert cpu_ops[op]["reason"].startswith("ran on CPU in a cuda")
    assert cpu_ops["aten::cat"]["count"] >= steps
    up = [s for s in _sigs(events, "cast") if s["site"]["file"] == mine]
    assert [(s["reason"], s["count"], s["bytes"]) for s in up] == [
        ("upcast bfloat16->float32", steps, steps * rows * vocab * 4)]


def _graph_break_module():
    class M(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            if y.sum().item() > 0:  # marker: graph break
                y = y + 1
            return y.relu()

    return M()


def test_graph_break_is_a_fallback_with_reason_site_and_count():
    torch._dynamo.reset()
    fn = torch.compile(_graph_break_module(), backend="aot_eager")
    ctx, events = _ctx()
    with ctx.explain("compiled"):
        fn(torch.ones(4))
    gb = [s for s in _sigs(events, "fallback") if s["subject"] == "graph break"]
    assert len(gb) == 1, _sigs(events)
    assert "item()" in gb[0]["reason"] and gb[0]["count"] >= 1
    assert gb[0]["site"]["file"] == HERE
    assert gb[0]["site"]["line"] == _this_line("marker:" + " graph break")
    assert gb[0]["fix"]
    assert _sigs(events, "recompile") == []  # first compiles are not recompiles
    first = _sigs(events, "compile")
    assert first and all(s["reason"] == "first compile of this frame" for s in first)
    torch._dynamo.reset()


class _TorchLog:
    """``TORCH_LOGS=<artifact>`` through torch._logging, its messages kept (not printed)."""

    def __init__(self, **artifacts: bool) -> None:
        import logging

        self.artifacts: dict[str, Any] = artifacts  # set_logs' keywords, named at run time
        self.messages: list[str] = []
        log = self

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                log.messages.append(record.getMessage())

        self.handler = Keep()

    def __enter__(self) -> _TorchLog:
        import logging

        torch._logging.set_logs(**self.artifacts)
        logging.getLogger("torch._dynamo").addHandler(self.handler)
        return self

    def __exit__(self, *exc) -> None:
        import logging

        logging.getLogger("torch._dynamo").removeHandler(self.handler)
        torch._logging.set_logs()


def _steady_compile(padded: bool, backend: str = "aot_eager", log: _TorchLog | None = None):
    torch._dynamo.reset()
    model = presets.tiny_llama()
    fn = torch.compile(model, backend=backend, dynamic=False)
    pad = 16 if padded else None
    a, b = (presets.token_batch(rows, pad_to=pad) for rows in ([7, 5], [9, 6]))
    ctx, events = _ctx()
    with torch.no_grad(), log or contextlib.nullcontext():
        explain_steady(ctx, "forward", lambda: fn(**a), warm_fn=lambda: fn(**b), warmup=1,
                       model=model, overhead_repeats=3)
    torch._dynamo.reset()
    return events


def _phase(events, kind, phase):
    return [s for s in _sigs(events, kind) if s.get("detail", {}).get("phase") == phase]


def test_two_lengths_recompile_with_the_guard_reason_site_and_one_off():
    """The recompile a new prompt length causes: torch's own recompile log says which guard
    failed; the signal says the same, sits at the compiled forward in the model's file (not
    in laya-tui or transformers' decorator), and the steady summary calls it one-off."""
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    with _TorchLog(recompiles=True) as log:
        events = _steady_compile(padded=False, log=log)
    torch_said = [m for m in log.messages if "triggered by the following guard failure" in m]
    assert len(torch_said) == 1, log.messages
    assert _phase(events, "recompile", "cold") == []
    assert len(_phase(events, "compile", "cold")) == 1
    (guard,) = _phase(events, "recompile", "warm")
    assert guard["reason"] and "size mismatch" in guard["reason"]
    assert guard["reason"].split(": ", 1)[1] in torch_said[0]  # the guard torch names
    assert "expected 7, actual 9" in guard["detail"]["guard"]
    assert "pad/bucket" in guard["fix"]
    forward = inspect.unwrap(LlamaForCausalLM.forward).__code__
    assert guard["site"] == {"file": forward.co_filename, "line": forward.co_firstlineno,
                             "func": "LlamaForCausalLM.forward"}
    assert guard["subject"] == (f"LlamaForCausalLM.forward (transformers/models/llama/"
                                f"modeling_llama.py:{forward.co_firstlineno})")
    assert guard["detail"]["stack"][1].startswith(("tests/test_regions_portable.py:", HERE))
    assert guard["detail"]["recurs"] is False  # the next call of width 9 compiles nothing
    log_sig = next(s for s in _sigs(events, "log"))
    assert any(x.startswith("recompile ") for x in log_sig["detail"]["appeared"])
    assert any(x.startswith("recompile ") for x in log_sig["detail"]["one_off"])
    assert not any(x.startswith("recompile ") for x in log_sig["detail"]["recurring"])
    assert "one-off" in log_sig["reason"]


def test_padded_inputs_warm_region_shows_no_recompile():
    events = _steady_compile(padded=True)
    assert len(_phase(events, "compile", "cold")) == 1
    assert _phase(events, "recompile", "cold") == _phase(events, "recompile", "warm") == []
    overhead = next(s for s in _sigs(events, "timing")
                    if s["subject"] == "forward: instrumentation overhead")
    assert overhead["value"] > 0 and overhead["detail"]["uninstrumented_s"] > 0


def test_eager_steady_state_reports_both_regions_and_what_persists():
    model = presets.tiny_llama(torch.bfloat16)
    batch = presets.token_batch([7, 5])
    ctx, events = _ctx()
    with torch.no_grad():
        res = ctx.explain_steady("forward", lambda: model(**batch), model=model,
                                 overhead_repeats=3)
    cold, warm = _phase(events, "cast", "cold"), _phase(events, "cast", "warm")
    assert cold and len(cold) == len(warm)
    assert all(s["detail"]["persists"] is True for s in warm)
    assert res.diff["gone"] == [] and res.diff["persists"]
    walls = [s for s in _sigs(events, "timing") if s["subject"] == "forward: region wall"]
    assert [s["detail"]["phase"] for s in walls] == ["cold", "warm"]
    env = [s for s in _sigs(events, "environment") if s["subject"] == "explain.rbln_region"]
    assert len(env) == 1 and env[0]["value"] == "unavailable"  # once per probe


def test_region_without_torch_ops_and_nested_exceptions():
    ctx, events = _ctx()
    with pytest.raises(RuntimeError, match="boom"), ctx.explain("r"):
        raise RuntimeError("boom")
    assert not [s for s in _sigs(events) if s["kind"] != "environment"]  # nothing on error
    with PortableRegion("plain") as r:
        pass
    assert r.entries == [] and r.wall_s >= 0


def test_bad_region_name_is_a_clear_error():
    ctx, _ = _ctx()
    with pytest.raises(ValueError, match="non-empty"):
        open_region(ctx, "")
    with pytest.raises(ValueError, match="backend"):
        ctx.explain("x", backend="npu")


@pytest.mark.slow
def test_inductor_fallback_kernel_is_reported_in_the_warm_region():
    events = _steady_compile(padded=True, backend="inductor")
    fb = [s for s in _phase(events, "fallback", "warm") if s["detail"].get("inductor")]
    assert fb, _sigs(events)
    assert any("scaled_dot_product" in s["subject"] for s in fb)
    assert all(s["detail"]["compiled"] for s in fb)
    assert _phase(events, "recompile", "warm") == []
