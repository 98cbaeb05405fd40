"""Explain sites point at the user's code: the innermost frame outside torch and laya-tui,
the function qualified by class, Dynamo's resume functions mapped back, each checked
against what torch itself reports (the profiler, compilation metrics, TORCH_LOGS)."""

from __future__ import annotations

import re
import sys

import pytest

from laya_tui.core.protocol import SignalEvent
from laya_tui.core.report_types import SignalDict

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.api import Context  # noqa: E402
from laya_tui.families.explain import explain_steady  # noqa: E402
from laya_tui.families.explain.sites import (  # noqa: E402
    INTERNAL,
    USER,
    classify_file,
    plain_name,
    site_kind,
)

HERE = __file__


class Norm(torch.nn.Module):
    """An RMS norm computed in fp32 inside a bf16 model: an upcast and a downcast."""

    def forward(self, x):
        h = x.float()  # marker: upcast
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return h.to(x.dtype)  # marker: downcast


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = Norm()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(self.norm(x))  # marker: block calls norm


class Split(torch.nn.Module):
    """A forward split in two by a graph break: Dynamo compiles a resume function for the
    second half."""

    def forward(self, x):
        y = x * 2
        torch._dynamo.graph_break()  # marker: graph break
        return y.relu() + 1


def _line(needle: str) -> int:
    lines = open(HERE).read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# marker: {needle}")]
    assert len(hits) == 1, needle
    return hits[0]


def _ctx():
    events: list[SignalEvent] = []
    return Context("explain/sites", "explain", events.append, opts={}), events


def _sigs(events, kind=None):
    out = [e["signal"] for e in events if e["type"] == "signal"]
    return [s for s in out if kind is None or s["kind"] == kind]


def test_cast_site_is_qualified_by_class_and_matches_the_profiler():
    from torch.profiler import ProfilerActivity, profile

    model = Block().to(torch.bfloat16)
    x = torch.randn(2, 8).bfloat16()
    ctx, events = _ctx()
    with torch.no_grad(), ctx.explain("forward", model=model):
        model(x)
    casts = {s["reason"]: s for s in _sigs(events, "cast")}
    up, down = casts["upcast bfloat16->float32"], casts["downcast float32->bfloat16"]
    assert Norm.forward.__qualname__ == "Norm.forward"
    assert up["site"] == {"file": HERE, "line": _line("upcast"), "func": "Norm.forward"}
    assert down["site"] == {"file": HERE, "line": _line("downcast"), "func": "Norm.forward"}
    # the full user stack: the norm, the block that called it, then this test
    stack = up["detail"]["stack"]
    assert stack[0].endswith(f":{_line('upcast')}(Norm.forward)")
    assert stack[1].endswith(f":{_line('block calls norm')}(Block.forward)")
    assert "test_cast_site_is_qualified_by_class_and_matches_the_profiler" in stack[2]
    # the profiler's Python events name the function each _to_copy ran in
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        model(x)
    first = Norm.forward.__code__.co_firstlineno
    owners = []
    for e in prof.events():
        # the casts Python code asked for (x.float(), h.to(dtype)), not the scalar wraps
        # inside other kernels
        called = e.cpu_parent.cpu_parent if e.cpu_parent is not None else None
        if e.name != "aten::_to_copy" or called is None or \
                not called.name.startswith("<built-in method"):
            continue
        p = called.cpu_parent
        while p is not None and "): " not in p.name:
            p = p.cpu_parent
        owners.append(p.name if p is not None else None)
    assert len(owners) == up["count"] + down["count"] == 2, owners
    # the profiler names the function (file, first line, co_name); ours adds the class
    assert all(o is not None and o.endswith(f"test_explain_sites.py({first}): forward")
               for o in owners), owners


def test_a_forward_split_by_a_graph_break_is_named_after_the_user_s_function():
    from torch._dynamo.utils import get_compilation_metrics

    torch._dynamo.reset()
    fn = torch.compile(Split(), backend="eager")
    ctx, events = _ctx()
    seen = {id(m) for m in get_compilation_metrics()}
    with ctx.explain("compiled"):
        fn(torch.ones(4))
    metrics = [m for m in get_compilation_metrics() if id(m) not in seen]
    torch._dynamo.reset()
    # torch's own record: the first frame, then its resume function at the break
    names = [m.co_name for m in metrics]
    assert names[0] == "forward" and names[1] is not None
    assert names[1].startswith("torch_dynamo_resume_in_forward_at_")
    at = re.search(r"_at_(\d+)$", names[1])
    assert at is not None, names[1]
    resume_line = int(at.group(1))
    assert resume_line == _line("graph break")
    compiles = _sigs(events, "compile")
    assert [s["site"] for s in compiles] == [
        {"file": HERE, "line": Split.forward.__code__.co_firstlineno, "func": "Split.forward"},
        {"file": HERE, "line": resume_line, "func": "Split.forward"}]
    assert compiles[1]["subject"] == f"Split.forward (tests/test_explain_sites.py:{resume_line})" \
        or compiles[1]["subject"] == f"Split.forward ({HERE}:{resume_line})"
    (gb,) = [s for s in _sigs(events, "fallback") if s["subject"] == "graph break"]
    assert gb["site"] == {"file": HERE, "line": resume_line, "func": "Split.forward"}
    assert gb["detail"]["graph_break_id"].startswith("GB")
    assert gb["detail"]["explanation"] and gb["detail"]["hints"]
    text = repr(_sigs(events))
    assert "torch_dynamo_resume" not in text


def test_resume_names_and_internal_files():
    assert plain_name("torch_dynamo_resume_in_forward_at_27") == "forward"
    assert plain_name("Norm.torch_dynamo_resume_in_forward_at_27") == "Norm.forward"
    assert plain_name("forward") == "forward"
    import laya_tui.families.decision_model as dm
    import laya_tui.families.presets as presets

    assert classify_file(presets.__file__) == INTERNAL  # the tool's own call sites
    assert classify_file(torch.__file__) == INTERNAL
    assert classify_file(HERE) == USER
    # the demo's model code stands for a user's code
    assert site_kind(presets.__file__, "host_greedy_decode") == USER
    assert site_kind(presets.__file__, "call_with") == INTERNAL
    assert site_kind(dm.__file__, "DecisionModel.forward") == USER
    package = sys.modules["laya_tui"].__file__
    assert package is not None
    probes = package.rsplit("/laya_tui/", 1)[0] + "/probes/x.py"
    assert classify_file(probes) == INTERNAL


def test_transformers_plumbing_is_internal_and_model_files_are_not():
    transformers = pytest.importorskip("transformers")
    import transformers.integrations.sdpa_attention as sdpa
    import transformers.models.gpt2.modeling_gpt2 as gpt2
    import transformers.utils.generic as generic

    assert transformers.__version__
    assert classify_file(gpt2.__file__) == USER
    assert classify_file(generic.__file__) == INTERNAL
    assert classify_file(sdpa.__file__) == INTERNAL


def test_steady_summary_one_off_follows_the_next_call():
    """Eager, the same call: what the warm region shows recurs in the next call too."""
    model = Block().to(torch.bfloat16)
    x = torch.randn(2, 8).bfloat16()
    ctx, events = _ctx()
    with torch.no_grad():
        res = explain_steady(ctx, "forward", lambda: model(x), model=model, overhead_repeats=1)
    warm = [s for s in _sigs(events, "cast") if s["detail"]["phase"] == "warm"]
    assert warm and all(s["detail"]["recurs"] and s["detail"]["persists"] for s in warm)
    assert res.diff["one_off"] == [] and len(res.diff["recurring"]) == len(warm)
    log = next(s for s in _sigs(events, "log"))
    assert log["reason"] == f"steady state: {len(warm)} recurring overhead signal(s) in the " \
        "warm region"


def test_steady_diff_splits_recurring_and_one_off():
    from laya_tui.families.explain.aggregate import steady_diff

    cold: list[SignalDict] = [
        {"kind": "compile", "probe": "p", "subject": "f", "reason": "first compile", "count": 1}]
    warm: list[SignalDict] = [
        {"kind": "recompile", "probe": "p", "subject": "f", "reason": "size mismatch", "count": 1},
        {"kind": "cast", "probe": "p", "subject": "aten::_to_copy", "reason": "upcast", "count": 2}]
    again = {("cast", "aten::_to_copy", "upcast")}
    diff = steady_diff(cold, warm, again)
    assert diff["recurring"] == ["cast aten::_to_copy (upcast) x2"]
    assert diff["one_off"] == ["recompile f (size mismatch) x1"]
    assert diff["gone"] == ["compile f (first compile) x1"]
    assert steady_diff(cold, warm)["recurring"] == [  # without the next call: all recur
        "recompile f (size mismatch) x1", "cast aten::_to_copy (upcast) x2"]
