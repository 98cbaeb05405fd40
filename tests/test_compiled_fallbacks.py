"""Inductor fallbacks are the eager kernels compiled code really calls when it runs.

Each test compiles a tiny model with Inductor, reads the explain regions of a cold and a
warm call, and profiles one more call: the profiler's ATen ops directly inside
``## Call CompiledFxGraph ... ##`` (what the generated code called) must be exactly the
region's fallback kernels plus the extern kernels it counted; the fallbacks must be the ops
the output code calls as ``torch.ops.aten.*`` (not ``extern_kernels.*``); the compile's own
work (the first call's ``param.data`` detaches) is no fallback.
"""

from __future__ import annotations

import collections
import re

import pytest

from laya_tui.core.protocol import SignalEvent

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.api import Context  # noqa: E402
from laya_tui.families.explain import explain_steady  # noqa: E402

HERE = __file__


class NoFallback(torch.nn.Module):
    """Linear-ReLU-Linear: Inductor generates the ReLU and calls addmm as an extern kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 16)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class WithFallback(torch.nn.Module):
    """A QR decomposition: Inductor has no lowering for linalg_qr and calls the eager
    kernel from the generated code."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x).relu()
        return torch.linalg.qr(h)[0]  # marker: qr


def _line(needle: str) -> int:
    lines = open(HERE).read().splitlines()
    hits = [i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# marker: {needle}")]
    assert len(hits) == 1, needle
    return hits[0]


def _base(name: str) -> str:
    return name.split(".")[0]


def _compile_and_profile(model, x):
    from torch._inductor.codecache import PyCodeCache
    from torch.profiler import ProfilerActivity, profile

    torch._dynamo.reset()
    fn = torch.compile(model, backend="inductor", dynamic=False)
    events: list[SignalEvent] = []
    ctx = Context("explain/fallbacks", "explain", events.append, opts={})
    loaded = set(PyCodeCache.modules) if hasattr(PyCodeCache, "modules") else set()
    with torch.no_grad():
        explain_steady(ctx, "forward", lambda: fn(x), warmup=1, model=model,
                       overhead_repeats=1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn(x)
    inside = collections.Counter(
        e.name for e in prof.events() if e.cpu_parent is not None
        and e.cpu_parent.name.startswith("## Call CompiledFxGraph"))
    new = [m for m in getattr(PyCodeCache, "modules", []) if m not in loaded]
    source = "\n".join(open(m.__file__).read() for m in new if getattr(m, "__file__", None))
    torch._dynamo.reset()
    sigs = [e["signal"] for e in events if e["type"] == "signal"]
    return sigs, inside, source


def _phase(sigs, phase):
    fallbacks: collections.Counter[str] = collections.Counter()
    for s in sigs:
        if s["kind"] == "fallback" and s.get("detail", {}).get("phase") == phase \
                and s["subject"] != "graph break":
            fallbacks[_base(s["subject"])] += s["count"]
    wall = next(s for s in sigs if s["kind"] == "timing"
                and s["subject"] == "forward: region wall" and s["detail"]["phase"] == phase)
    kernels = wall["detail"].get("compiled_code_kernels", {})
    extern: collections.Counter[str] = collections.Counter()
    for name, n in kernels.get("extern", {}).items():
        extern[_base(name)] += n
    return fallbacks, extern, kernels


def _output_code_fallbacks(source: str) -> set[str]:
    """ATen ops the output code's ``call`` invokes as ``torch.ops.aten.<op>.<overload>(``."""
    body = source.split("def call(", 1)[1] if "def call(" in source else ""
    return {f"aten::{m}" for m in re.findall(r"torch\.ops\.aten\.(\w+)\.\w+\(", body)}


def test_a_model_without_fallback_reports_none_and_the_profiler_agrees():
    torch.manual_seed(0)
    sigs, inside, source = _compile_and_profile(NoFallback().eval(), torch.randn(4, 16))
    assert inside, "the profiler saw no kernel inside the compiled call"
    assert _output_code_fallbacks(source) == set()
    for phase in ("cold", "warm"):
        fallbacks, extern, _ = _phase(sigs, phase)
        assert fallbacks == {}, (phase, fallbacks)
        # every eager kernel the profiler saw inside the compiled call is an extern kernel
        assert extern == inside, (phase, extern, inside)
    assert "aten::detach" not in repr(sigs)


def test_a_real_fallback_is_reported_once_per_call_at_the_user_s_line():
    torch.manual_seed(0)
    sigs, inside, source = _compile_and_profile(WithFallback().eval(), torch.randn(4, 4))
    in_code = _output_code_fallbacks(source)
    assert "aten::linalg_qr" in in_code
    for phase in ("cold", "warm"):
        fallbacks, extern, _ = _phase(sigs, phase)
        # fallbacks + extern kernels = what the profiler counts inside the compiled call
        assert fallbacks + extern == inside, (phase, fallbacks, extern, inside)
        assert set(fallbacks) == in_code, (phase, fallbacks, in_code)
    qr = next(s for s in sigs if s["kind"] == "fallback" and s["subject"].startswith(
        "aten::linalg_qr") and s["detail"]["phase"] == "warm")
    assert qr["count"] == inside["aten::linalg_qr"] == 1
    assert qr["site"] == {"file": HERE, "line": _line("qr"), "func": "WithFallback.forward"}
    assert qr["detail"]["compiled"] is True and qr["detail"]["stack"][0].endswith(
        f":{_line('qr')}(WithFallback.forward)")
    assert "aten::detach" not in repr(sigs)  # the first call's param.data reads: torch's own


@pytest.mark.slow
def test_transformers_gpt2_fallbacks_match_the_profiler_and_sit_in_the_modeling_file():
    transformers = pytest.importorskip("transformers")
    from transformers.models.gpt2 import modeling_gpt2

    from laya_tui.families import presets

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512,
                                     n_positions=64, bos_token_id=1, eos_token_id=2)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    batch = presets.token_batch([7, 5])
    torch._dynamo.reset()
    fn = torch.compile(model, backend="inductor", dynamic=False)
    from torch.profiler import ProfilerActivity, profile

    events: list[SignalEvent] = []
    ctx = Context("explain/gpt2", "explain", events.append, opts={})
    with torch.no_grad():
        explain_steady(ctx, "forward", lambda: fn(**batch), warmup=1, model=model,
                       overhead_repeats=1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn(**batch)
    torch._dynamo.reset()
    inside = collections.Counter(
        e.name for e in prof.events() if e.cpu_parent is not None
        and e.cpu_parent.name.startswith("## Call CompiledFxGraph"))
    sigs = [e["signal"] for e in events if e["type"] == "signal"]
    fallbacks, extern, _ = _phase(sigs, "warm")
    assert fallbacks + extern == inside
    assert "aten::detach" not in fallbacks
    for s in sigs:
        if site := s.get("site"):
            assert "laya_tui" not in site["file"], s
            assert "torch_dynamo_resume" not in str(site["func"])
    sdpa = [s for s in sigs
            if s["kind"] == "fallback" and "scaled_dot_product" in (s.get("subject") or "")]
    for s in sdpa:
        site = s.get("site")
        assert site is not None and site["file"] == modeling_gpt2.__file__, site
        assert site["func"] == "GPT2Attention.forward"
    compiles = [s for s in sigs if s["kind"] == "compile"]
    site = compiles[0].get("site") if compiles else None
    assert compiles and site is not None and site["file"] == modeling_gpt2.__file__
    assert site["func"] == "GPT2LMHeadModel.forward"


_TWIN = '''
import json, sys
import torch
from laya_tui.api import Context
from laya_tui.families.explain import explain_steady


class WithFallback(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x).relu()
        return torch.linalg.qr(h)[0]


torch.manual_seed(0)
model, x = WithFallback().eval(), torch.randn(4, 4)
fn = torch.compile(model, backend="inductor", dynamic=False)
events = []
ctx = Context("explain/twin", "explain", events.append, opts={})
with torch.no_grad():
    explain_steady(ctx, "forward", lambda: fn(x), warmup=1, model=model, overhead_repeats=1)
from torch._dynamo.utils import counters
sites = [e["signal"]["site"] for e in events if e["type"] == "signal"
         and e["signal"]["kind"] == "fallback" and "linalg_qr" in e["signal"]["subject"]]
print(json.dumps({"sites": sites, "hits": counters["inductor"]["fxgraph_cache_hit"]}))
'''


def test_a_graph_served_from_inductor_s_cache_is_sited_in_this_checkout(tmp_path):
    """The same model file in two checkouts, compiled one after the other with one inductor
    cache: the second compile is a cache hit whose line map names the first checkout's
    file; the fallback's site must still be the file this process ran. The cache folder is
    one a user could name (no "torchinductor" in its path): its output code must still be
    read as Inductor's."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    runs = []
    for name in ("checkout_a", "checkout_b"):
        model = tmp_path / name / "model.py"
        model.parent.mkdir()
        model.write_text(_TWIN)
        out = subprocess.run([sys.executable, str(model)], env=env, capture_output=True,
                             text=True, timeout=600, cwd=model.parent)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append((str(model), json.loads(out.stdout.strip().splitlines()[-1])))
    (first, a), (second, b) = runs
    assert b["hits"] >= 1, "the second checkout's compile was not served from the cache"
    assert a["sites"] and {s["file"] for s in a["sites"]} == {first}
    assert b["sites"] and {s["file"] for s in b["sites"]} == {second}
    assert {s["func"] for s in b["sites"]} == {"WithFallback.forward"}
    # the same graph traced from a different file (another name, other line numbers) is
    # served with the first file's line map: no site may name that file or its lines; the
    # fallback is sited at the compiled function of the file that ran instead
    other = tmp_path / "elsewhere" / "other_model.py"
    other.parent.mkdir()
    other.write_text("# a different project\n" * 7 + _TWIN)
    out = subprocess.run([sys.executable, str(other)], env=env, capture_output=True,
                         text=True, timeout=600, cwd=other.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    c = json.loads(out.stdout.strip().splitlines()[-1])
    assert c["hits"] >= 1 and c["sites"]
    assert {s["file"] for s in c["sites"]} == {str(other)}
    assert {s["func"] for s in c["sites"]} == {"WithFallback.forward"}
    lines = other.read_text().splitlines()
    body = range(lines.index("    def forward(self, x):") + 1, lines.index(
        "        return torch.linalg.qr(h)[0]") + 2)
    assert {s["line"] for s in c["sites"]} <= set(body)
