"""User-model benchmark: drift attribution cost, graph breaks vs torch._dynamo.explain, and
the explain family's wall time cold and cached.

Usage: .venv/bin/python benchmarks/bench_user_models.py [--repeats N] [--skip-family]
       [--only GLOB]

1. Module attribution (forward hooks on every module, fp32 CPU reference + model run,
   per-module comparison) for both presets in bf16: its cost as a ratio to the plain bf16
   forward (medians of interleaved runs), split into the hooked model run and the whole
   attribution (reference run included).
2. Graph breaks per test module (tests/test_graph_breaks.py): torch._dynamo.explain's
   count, the explain region's (graph_break_reasons, deduplicated per site), and what the
   ``graph_break`` counter alone sees (the region's old source).
3. The explain family through the CLI (``--only`` GLOB, default ``explain/*``): cold (empty
   result cache and Inductor cache) and cached (result cache hit), seconds and their ratio.
All figures are measured in this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from laya_tui.families.rbln_status import guard_autoload  # noqa: E402

guard_autoload()


def attribution_cost(repeats: int) -> None:
    import torch

    from laya_tui.families import presets
    from laya_tui.families.explain.drift import module_drift

    print("[1] module attribution cost, bf16 presets on CPU "
          f"(median of {repeats} interleaved runs)")
    print(f"  {'preset':16} {'plain ms':>9} {'hooked model ms':>16} {'attribution ms':>15} "
          f"{'model/plain':>12} {'total/plain':>12} {'modules':>8}")
    for build in (presets.tiny_llama, presets.tiny_modernbert):
        model, ref = build(torch.bfloat16), build(None)
        batch = presets.token_batch([7, 5])
        mask = batch["attention_mask"].bool()
        plain, hooked, total = [], [], []
        res = None
        with torch.no_grad():
            for _ in range(2):
                model(**batch)
                ref(**batch)
            for _ in range(repeats):
                t0 = time.perf_counter()
                model(**batch)
                plain.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                res = module_drift(model, ref, lambda m=model, b=batch: m(**b),
                                   lambda r=ref, b=batch: r(**b), mask=mask)
                total.append(time.perf_counter() - t0)
                hooked.append(res["seconds"]["model"])
        p, h, t = (statistics.median(x) for x in (plain, hooked, total))
        print(f"  {build.__name__:16} {p * 1e3:9.2f} {h * 1e3:16.2f} {t * 1e3:15.2f} "
              f"{h / p:11.2f}x {t / p:11.2f}x {res['compared'] if res else 0:8}")


def graph_breaks() -> None:
    import torch
    from torch._dynamo import utils as du

    sys.path.insert(0, str(REPO))
    from laya_tui.api import Context
    from tests.test_graph_breaks import MODULES

    print("\n[2] graph breaks: torch._dynamo.explain vs the explain region vs the counter alone")
    print(f"  {'module':12} {'explain':>8} {'laya-tui':>9} {'counter only':>13} "
          f"{'sites':>6}  kinds")
    totals = [0, 0, 0]
    for name, cls in MODULES.items():
        torch._dynamo.reset()
        ex = torch._dynamo.explain(cls())(torch.ones(4))
        n_explain = len(ex.break_reasons)
        torch._dynamo.reset()
        du.counters.clear()
        events: list[dict] = []
        ctx = Context("bench/gb", "explain", events.append, opts={})
        fn = torch.compile(cls(), backend="eager")
        with ctx.explain("compiled"):
            fn(torch.ones(4))
        counter = sum(du.counters["graph_break"].values())
        torch._dynamo.reset()
        sigs = [e["signal"] for e in events if e["type"] == "signal"
                and e["signal"].get("subject") == "graph break"]
        n_laya = sum(s["count"] for s in sigs)
        kinds = sorted({s["reason"].splitlines()[0][:40] for s in sigs})
        totals[0] += n_explain
        totals[1] += n_laya
        totals[2] += counter
        print(f"  {name:12} {n_explain:8} {n_laya:9} {counter:13} {len(sigs):6}  "
              f"{'; '.join(kinds)}")
    print(f"  {'total':12} {totals[0]:8} {totals[1]:9} {totals[2]:13}")


def family(only: str) -> None:
    print(f"\n[3] explain family through the CLI (--only {only!r}, --jobs 1)")
    with tempfile.TemporaryDirectory(prefix="laya-bench-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor")
        times = {}
        for label in ("cold", "cached"):
            out = Path(tmp) / f"{label}.json"
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "laya_tui", "--headless", "-q",
                                   "--json", str(out), "--only", only, "--jobs", "1",
                                   "--cache-dir", f"{tmp}/cache", "--out", f"{tmp}/out"],
                                  cwd=REPO, env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
            times[label] = time.perf_counter() - t0
            report = json.loads(out.read_text()) if out.exists() else {"probes": []}
            cached = sum(1 for p in report["probes"] if p.get("cached"))
            st = report.get("summary", {}).get("status", {})
            print(f"  {label:7} {times[label]:8.1f} s  exit {proc.returncode}  "
                  f"{len(report['probes'])} cells, {cached} cached, status {st}")
        print(f"  cold/cached = {times['cold'] / times['cached']:.1f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--skip-family", action="store_true")
    ap.add_argument("--only", default="explain/*")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    attribution_cost(args.repeats)
    graph_breaks()
    if not args.skip_family:
        family(args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
