"""Every graph break Dynamo records, per site, against ``torch._dynamo.explain``."""

from __future__ import annotations

import sys
import zlib

import pytest

from laya_tui.core.protocol import SignalEvent
from laya_tui.core.report_types import SignalDict

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.api import Context  # noqa: E402
from laya_tui.families.explain.graph_breaks import hint_categories, parse_reason  # noqa: E402
from tests._signals import detail_of, site_of


class ItemSync(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return y + y.sum().item()  # break: item


class DataIf(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:  # break: data-dependent if
            y = y + 1
        return y.relu()


class Print(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        print("forward", y.shape)  # break: print
        return y + 1


class Builtin(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        n = len(globals())  # break: unsupported builtin
        return y + 0 * n


class CFunction(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        c = zlib.crc32(b"laya")  # break: C function
        return y + 0 * c


class Repeated(torch.nn.Module):
    """The same .item() site in three layers, plus a data-dependent if: counts per site."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(ItemSync() for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        if x.mean() > 0:  # break: repeated if
            x = x - 1
        return x


MODULES = {"item": ItemSync, "data-if": DataIf, "print": Print, "builtin": Builtin,
           "c-function": CFunction, "repeated": Repeated}


def _site_counts_explain(module) -> dict[tuple[str, int], int]:
    torch._dynamo.reset()
    out = torch._dynamo.explain(module)(torch.ones(4))
    counts: dict[tuple[str, int], int] = {}
    for r in out.break_reasons:
        f = r.user_stack[-1]
        counts[(f.filename, f.lineno)] = counts.get((f.filename, f.lineno), 0) + 1
    torch._dynamo.reset()
    return counts


def _region_breaks(module) -> list[SignalDict]:
    torch._dynamo.reset()
    events: list[SignalEvent] = []
    ctx = Context("explain/gb", "explain", events.append, opts={})
    fn = torch.compile(module, backend="eager")
    with ctx.explain("compiled"):
        fn(torch.ones(4))
    torch._dynamo.reset()
    return [e["signal"] for e in events if e["type"] == "signal"
            and e["signal"]["kind"] == "fallback" and e["signal"]["subject"] == "graph break"]


def _line(needle: str) -> int:
    lines = open(__file__).read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# break: {needle}")]
    assert len(hits) == 1, needle
    return hits[0]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_count_per_site_matches_dynamo_explain(name: str, capsys):
    expected = _site_counts_explain(MODULES[name]())
    breaks = _region_breaks(MODULES[name]())
    got: dict[tuple[str, int], int] = {}
    for s in breaks:
        site = site_of(s)
        assert site["line"] is not None and s["count"] is not None, s
        key = (site["file"], site["line"])
        got[key] = got.get(key, 0) + s["count"]
    assert expected, f"{name}: torch._dynamo.explain found no break to compare with"
    assert got == expected
    # deduplicated: one signal per (reason, user frame)
    keys = [(s["reason"], site_of(s)["file"], site_of(s)["line"]) for s in breaks]
    assert len(keys) == len(set(keys))
    for s in breaks:
        d = detail_of(s)
        assert d["graph_break"] is True and s["fix"] and d["stack"]
        assert d["stack"][0].endswith(f":{site_of(s)['line']}({site_of(s)['func']})")


def _torch_graph_break_log(module) -> list[str]:
    """What ``TORCH_LOGS=graph_breaks`` prints for one compile (torch._logging, captured)."""
    import logging

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    torch._dynamo.reset()
    handler = Keep()
    torch._logging.set_logs(graph_breaks=True)
    logging.getLogger("torch._dynamo").addHandler(handler)
    try:
        torch.compile(module, backend="eager")(torch.ones(4))
    finally:
        logging.getLogger("torch._dynamo").removeHandler(handler)
        torch._logging.set_logs()
        torch._dynamo.reset()
    return [r for r in records if "Graph Break Reason:" in r]


def test_data_dependent_if_has_torch_s_type_id_explanation_and_hints():
    """Dynamo records this break in its old terse form ("generic_jump TensorVariable()")
    and the ``graph_break`` counter misses it; the signal still carries what torch's own
    graph-break log says: the type, its GB id, the explanation and the hints."""
    from torch._dynamo.utils import counters

    counters.clear()
    (gb,) = _region_breaks(DataIf())
    assert site_of(gb)["line"] == _line("data-dependent if") and gb["count"] == 1
    assert site_of(gb)["func"] == "DataIf.forward"
    (log,) = _torch_graph_break_log(DataIf())
    reason = log.split("Graph Break Reason: ", 1)[1].splitlines()[0]
    assert gb["reason"] == reason == "Data-dependent branching"
    d = detail_of(gb)
    assert d["graph_break_type"] == reason and d["dynamo_reason"].startswith("generic_jump")
    gb_id = d["graph_break_id"]
    assert gb_id == "GB0170" and f"gb/{gb_id.lower()}.html" in log
    assert d["documentation"] in log
    assert d["explanation"] and d["explanation"] in " ".join(log.split())
    assert d["hints"] and all(h in log for h in d["hints"])
    assert "FUNDAMENTAL" in d["hint_categories"]
    assert gb["fix"] is not None
    assert "torch.where" in gb["fix"]


def test_structured_message_gives_type_explanation_hints_and_categories():
    (gb,) = _region_breaks(CFunction())
    d = detail_of(gb)
    assert site_of(gb)["line"] == _line("C function")
    assert d["graph_break_type"] == gb["reason"] == "Attempted to call function marked as skipped"
    assert "zlib.crc32" in d["explanation"]
    assert d["hints"] and "Developer debug context" not in " ".join(d["hints"])
    assert d.get("graph_break_id", "GB").startswith("GB")
    assert d.get("documentation", "https://").startswith("https://")
    (item,) = _region_breaks(ItemSync())
    assert item["fix"] is not None
    assert "capture_scalar_outputs" in item["fix"]  # the actionable hint, not boilerplate


def test_hint_categories_come_from_torch_graph_break_hints():
    gbh = pytest.importorskip("torch._dynamo.graph_break_hints")
    hints = [gbh.SUPPORTABLE[0], "a hint of this model's own", gbh.FUNDAMENTAL[0]]
    assert hint_categories(hints) == ["SUPPORTABLE", "FUNDAMENTAL"]
    # a structured break whose hints are category hints carries them, and the fix skips them
    from laya_tui.families.explain.graph_breaks import collect

    class Reason:
        reason = ("Some break\n  Explanation: why\n  Hint: " + gbh.SUPPORTABLE[0]
                  + "\n  Hint: do this instead\n\n  Developer debug context: x")
        user_stack: list = []

    (gb,) = collect([Reason(), Reason()], {})
    assert gb.count == 2 and gb.hint_categories == ["SUPPORTABLE"]
    assert gb.fix() == "do this instead"


def test_parse_reason_and_categories_without_dynamo():
    text = ("Failed to trace builtin operator\n  Explanation: Dynamo does not know\n"
            "    how to trace `print`\n  Hint: Avoid calling `print`.\n\n"
            "  Developer debug context: builtin print")
    p = parse_reason(text)
    assert p == {"headline": "Failed to trace builtin operator",
                 "explanation": "Dynamo does not know how to trace `print`",
                 "hints": ["Avoid calling `print`."]}
    assert hint_categories(["not a torch hint"]) == []
    assert sys.modules.get("torch") is not None
