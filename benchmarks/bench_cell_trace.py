"""What a cell's own TORCH_TRACE slice costs its compiles: the same torch.compile work with and
without the slice, interleaved, in one process (docs/architecture.md, 'TORCH_TRACE: reading
the logs users have').

Usage: .venv/bin/python benchmarks/bench_cell_trace.py [--rounds 4] [--backend inductor] [--aoti]

Each round resets Dynamo and compiles a small module (two Linear layers and a data-dependent
branch: two frames) on two input shapes (a recompile each: four compiles), with inductor's
FX-graph and AOTAutograd caches off so every round does the whole compile; ``--aoti`` times
an AOTI cell's work instead (torch.export and ``aoti_compile_and_package`` of a branch-free
copy). A round runs inside ``cell_trace`` of an explain cell (traced) or of an env cell (the
same code path, no slice), alternating which goes first. Printed: medians of the process's
CPU time and of wall time of the work per round for each, their ratio, what a traced cell
spends after its run (reading the slice back, tlparse's page), torch's own
``structured_logging_overhead_s`` summed over a traced round's compiles, and the load
average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--aoti", action="store_true",
                    help="time torch.export + aoti_compile_and_package instead (an AOTI "
                    "cell's packaging) of a branch-free copy of the model")
    args = ap.parse_args()
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload(os.environ)
    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    from laya_tui.api import Context
    from laya_tui.families.torch_trace_capture import cell_trace, slice_summary

    inductor_config.fx_graph_cache = False
    functorch_config.enable_autograd_cache = False

    class Small(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.a(x).relu()
            if y.sum() > 0:  # a graph break: two frames
                y = y * 2
            return self.b(y).softmax(-1)

    class Flat(Small):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x).relu() * 2).softmax(-1)

    model, flat = Small().eval(), Flat().eval()
    out = tempfile.mkdtemp(prefix="laya-bench-cell-trace-")
    slices: list[dict[str, float]] = []
    after: list[float] = []

    def one_round(traced: bool) -> tuple[float, float]:
        torch._dynamo.reset()
        events: list[dict[str, object]] = []
        ctx = Context("explain/bench" if traced else "env/bench", "explain" if traced
                      else "env", events.append, opts={"out": out})
        with cell_trace(ctx), torch.no_grad():
            c0, t0 = time.process_time(), time.perf_counter()
            if args.aoti:
                ep = torch.export.export(flat, (torch.randn(4, 32),))
                torch._inductor.aoti_compile_and_package(
                    ep, package_path=os.path.join(out, f"m{len(after)}.pt2"))
            else:
                compiled = torch.compile(model, backend=args.backend, dynamic=False)
                compiled(torch.randn(4, 32))
                compiled(torch.randn(8, 32))
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            a0 = time.perf_counter()
        after.append(time.perf_counter() - a0)  # the slice read back, tlparse's page
        for e in events:
            sig = e["signal"]
            if isinstance(sig, dict) and sig.get("subject") == "torch trace":
                slices.append(slice_summary(sig["detail"]["path"]))
        return cpu, wall

    one_round(False)  # imports, the CPU-ISA probe: out of the figures
    load0 = os.getloadavg()
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for i in range(max(1, args.rounds)):
        for traced in ((True, False) if i % 2 == 0 else (False, True)):
            runs[traced].append(one_round(traced))
    load1 = os.getloadavg()
    med = {t: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
           for t, v in runs.items()}
    what = "torch.export + aoti_compile_and_package" if args.aoti else f"backend {args.backend}"
    print(f"torch {torch.__version__}, {what}, {args.rounds} rounds each, "
          f"load average {load0[0]:.2f} -> {load1[0]:.2f} ({os.cpu_count()} CPUs)")
    for traced in (False, True):
        cpu, wall = med[traced]
        print(f"  {'with slice' if traced else 'no slice  '}: CPU {cpu:.3f} s, wall {wall:.3f} s"
              " per round (median)")
    print(f"  with/without: CPU {med[True][0] / med[False][0]:.3f}x, "
          f"wall {med[True][1] / med[False][1]:.3f}x")
    traced_after = [a for a, t in zip(after[1:], [x for i in range(max(1, args.rounds))
                                                  for x in ((True, False) if i % 2 == 0
                                                            else (False, True))],
                                       strict=True) if t]
    if traced_after:
        print(f"  after a traced cell (slice read back, tlparse page): "
              f"{statistics.median(traced_after):.3f} s wall (median)")
    if slices:
        s = slices[-1]
        print(f"  a traced round: {s['compiles']:.0f} compiles, {s['records']:.0f} records, "
              f"compile {s['compile_s']:.3f} s of which torch's structured_logging_overhead_s "
              f"{s['tracing_overhead_s']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
