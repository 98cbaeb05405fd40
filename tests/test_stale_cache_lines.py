"""A fallback served from Inductor's FX-graph cache after an edit that only moved lines is
sited at the line where the code is now (the cache keys the graph, not the source, and
serves the old line numbers); a quoted line the file no longer has gives no site rather than
a wrong one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.families.explain.source_map import current_line

MODEL = '''
import torch


class WithFallback(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
{pad}
    def forward(self, x):
        h = self.a(x).relu()
        return torch.linalg.qr(h)[0]  # marker: qr
'''

RUN = '''
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
from model_qr import WithFallback
from laya_tui.api import Context
from laya_tui.families.explain import explain_steady
torch.manual_seed(0)
model, x = WithFallback().eval(), torch.randn(4, 4)
fn = torch.compile(model, backend="inductor", dynamic=False)
events = []
ctx = Context("explain/qr", "explain", events.append, opts={})
with torch.no_grad():
    explain_steady(ctx, "forward", lambda: fn(x), warmup=1, model=model, overhead_repeats=1)
sites = [e["signal"].get("site") for e in events if e["type"] == "signal"
         and e["signal"]["kind"] == "fallback" and "qr" in e["signal"]["subject"]]
print(json.dumps(sites))
'''


def _marker_line(path: Path) -> int:
    return next(i + 1 for i, t in enumerate(path.read_text().splitlines())
                if t.endswith("# marker: qr"))


def test_current_line_follows_the_quoted_code_or_gives_up(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def forward(x):\n\n\n    y = x + 1\n    return y\n")
    assert current_line(str(f), 4, "y = x + 1", "forward") == 4
    assert current_line(str(f), 2, "y = x + 1", "forward") == 4  # moved: found in forward
    assert current_line(str(f), 2, "y = x * 7", "forward") is None  # gone: no site
    assert current_line(str(f), 2, None, "forward") == 2  # nothing quoted: as given
    f.write_text("def forward(x):\n    y = x + 1\n    y = x + 1\n    return y\n")
    assert current_line(str(f), 9, "y = x + 1", "forward") is None  # two candidates


@pytest.mark.skipif(sys.platform != "linux", reason="Inductor's C++ backend: Linux here")
@pytest.mark.parametrize("where", ["same checkout", "another checkout"])
def test_a_cached_graph_after_an_edit_that_moved_lines_is_sited_where_the_code_is(
        tmp_path: Path, where: str) -> None:
    pytest.importorskip("torch")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    seen = []
    for i, pad in enumerate(("", "\n\n\n")):  # one graph; the second file's lines moved
        work = tmp_path / ("ws" if where == "same checkout" else f"ws{i}")
        work.mkdir(exist_ok=True)
        model = work / "model_qr.py"
        model.write_text(MODEL.format(pad=pad))
        out = subprocess.run([sys.executable, "-c", RUN, str(work)], env=env, text=True,
                             capture_output=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        sites = json.loads(out.stdout.strip().splitlines()[-1])
        assert sites, out.stdout
        seen.append(({s["line"] for s in sites}, _marker_line(model)))
    (first, at1), (second, at2) = seen
    assert at2 == at1 + 3
    assert first == {at1}
    assert second == {at2}  # not the cache's old line
