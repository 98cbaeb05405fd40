"""Real TORCH_TRACE logs for the tests: scripts run by torch in a subprocess with TORCH_TRACE
(and TORCH_LOGS) set, and what TORCH_LOGS printed for the same run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

#: A function with two graph breaks called with two input shapes (recompiles), then a
#: torch.export that fails on a data-dependent branch. Line numbers matter to the tests.
MODEL_A = '''\
import json

import torch
import torch._dynamo.utils as du


def f(x):
    y = x.sin()
    if y.sum() > 0:  # graph break: data-dependent branch
        y = y * 2
    print("tick")  # graph break: print
    return y.cos()


cf = torch.compile(f, backend="eager", dynamic=False)
for n in (4, 8):  # two input shapes: a recompile
    cf(torch.ones(n))


class M(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: torch.export fails here
            return x + 1
        return x - 1


err = None
try:
    torch.export.export(M(), (torch.randn(3),))
except Exception as exc:  # noqa: BLE001
    err = {"type": type(exc).__name__, "message": str(exc)[:3000]}
metrics = [{"compile_id": str(m.compile_id), "seconds": m.entire_frame_compile_time_s}
           for m in du.get_compilation_metrics()]
print(json.dumps({"export_error": err, "graph_break_reasons": len(du.graph_break_reasons),
                  "metrics": metrics}))
'''

#: One rank of a two-process gloo group: rank 0 compiles with inductor, then rank 1 compiles
#: the same function (the shared FX-graph cache serves it).
RANK_SCRIPT = '''\
import json
import sys

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters

rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=rank, world_size=2)


def g(x):
    return (x.sin() + 1).cos() * 2


cg = torch.compile(g)
if rank == 1:
    dist.barrier()  # rank 0 has compiled: its graph is in the shared cache
cg(torch.ones(8))
if rank == 0:
    dist.barrier()
if rank == 1 and sys.argv[3:] == ["diverge"]:  # a frame only this rank compiles
    torch.compile(lambda x: x.exp() - 1)(torch.ones(8))
print(json.dumps({"rank": rank, "fx_hit": counters["inductor"]["fxgraph_cache_hit"],
                  "fx_miss": counters["inductor"]["fxgraph_cache_miss"]}))
dist.destroy_process_group()
'''

TORCH_HINT = "pip install 'laya-tui[torch]'"


def torch_env(**extra: str) -> dict[str, str]:
    """The environment of a torch subprocess (torch-rbln's autoload off without its runtime)."""
    pytest.importorskip("torch", reason=f"torch not installed: {TORCH_HINT}")
    env = dict(os.environ)
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload(env)
    env.pop("TORCH_TRACE", None)
    env.pop("TORCH_LOGS", None)
    env.update(extra)
    return env


def run_model_a(folder: Path) -> dict[str, object]:
    """Run :data:`MODEL_A` with TORCH_TRACE=folder/trace and TORCH_LOGS on; returns the
    script's own JSON line, TORCH_LOGS' text (stderr) and the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "model_a.py"
    script.write_text(MODEL_A)
    trace = folder / "trace"
    env = torch_env(TORCH_TRACE=str(trace), TORCH_LOGS="graph_breaks,recompiles")
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"script": str(script), "trace": trace, "stderr": proc.stderr, **out}


def run_ranks(folder: Path, diverge: bool = False) -> dict[str, object]:
    """Two processes standing for two ranks (gloo), TORCH_TRACE into one folder; with
    ``diverge`` rank 1 compiles one more frame than rank 0."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "rank.py"
    script.write_text(RANK_SCRIPT)
    trace = folder / "trace"
    env = torch_env(TORCH_TRACE=str(trace),
                    TORCHINDUCTOR_CACHE_DIR=str(folder / "inductor-cache"))
    store = folder / "store"
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(store),
                               *(["diverge"] if diverge else [])], cwd=folder,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in (0, 1)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=900)
        assert p.returncode == 0, stderr[-3000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return {"trace": trace, "ranks": {o["rank"]: o for o in outs}}


# -- what TORCH_LOGS said -----------------------------------------------------------------

_LOG_LINE = re.compile(r"^\S+ \S+ \d+ \S+\] \[(?P<cid>[^\]]+)\] \[__(?P<art>\w+)\] (?P<msg>.*)$")
_BREAK_AT = re.compile(r"Graph break .*in user code at (.+):(\d+)$")
_GB_LINK = re.compile(r"/gb/gb(\d+)\.html")
_RECOMPILING = re.compile(r"^Recompiling function (\S+) in (.+):(\d+)$")
_GUARD = re.compile(r"^\s+- (\d+/\d+): (.*)$")


def torch_logs_graph_breaks(stderr: str) -> tuple[Counter[tuple[str, int]], Counter[str]]:
    """TORCH_LOGS=graph_breaks: how many breaks at each (file, line), and their GB ids."""
    at: Counter[tuple[str, int]] = Counter()
    ids: Counter[str] = Counter()
    for ln in stderr.splitlines():
        m = _LOG_LINE.match(ln)
        if not m or m.group("art") != "graph_breaks":
            continue
        msg = m.group("msg")
        b = _BREAK_AT.search(msg)
        if b:
            at[(b.group(1), int(b.group(2)))] += 1
        g = _GB_LINK.search(msg)
        if g:
            ids[f"GB{g.group(1)}"] += 1
    return at, ids


def torch_logs_recompiles(stderr: str) -> list[dict[str, Any]]:
    """TORCH_LOGS=recompiles: each recompile's compile id, function and first failing guard."""
    out: list[dict[str, Any]] = []
    for ln in stderr.splitlines():
        m = _LOG_LINE.match(ln)
        if not m or m.group("art") != "recompiles":
            continue
        msg = m.group("msg")
        r = _RECOMPILING.match(msg)
        if r:
            out.append({"compile_id": m.group("cid"), "function": r.group(1), "guards": []})
            continue
        g = _GUARD.match(msg)
        if g and out:
            out[-1]["guards"].append(f"{g.group(1)}: {g.group(2)}")
    return out
