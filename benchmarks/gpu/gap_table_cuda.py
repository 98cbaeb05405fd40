"""On a CUDA host: the gap table with the bf16 model on the GPU and the fp32 reference on the
CPU (as the explain probe runs it), on the test models with known answers, with and without
a memory budget.

    PYTHONPATH=. python3 benchmarks/gpu/gap_table_cuda.py [OUT.txt]
"""

from __future__ import annotations

import copy
import os
import sys
import time

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

import torch  # noqa: E402

sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

from laya_tui.families.explain import gap_table as g  # noqa: E402
from tests.test_gap_table import Net  # noqa: E402

#: (label, block kinds, the modules that must rank first: the unstable ones)
MODELS = [("one unstable (scss)", "scss", {"blocks.1"}),
          ("two unstable (cscs)", "cscs", {"blocks.0", "blocks.2"}),
          ("fine in bf16 (ssss)", "ssss", set()),
          ("five of 16", "csssscsscssscssc", {f"blocks.{i}" for i in (0, 5, 8, 12, 15)})]


def main() -> int:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    lines = [f"gap table on {dev} ({name}), torch {torch.__version__}: model bf16 on {dev}, "
             "fp32 reference on the CPU"]
    bad = 0
    for label, kinds, unstable in MODELS:
        torch.manual_seed(0)
        ref = Net(kinds).eval()
        x = torch.randn(8, 16).to(torch.bfloat16).float()
        model = copy.deepcopy(ref).to(torch.bfloat16).to(dev)
        for budget in (None, 1024):
            t0 = time.perf_counter()
            t = g.gap_table(model, ref, lambda m=model, x=x: m(x.to(torch.bfloat16).to(dev)),
                            lambda r=ref, x=x: r(x), budget=budget, folder="/tmp/gap_spill")
            wall = time.perf_counter() - t0
            ranked = t.ranked()
            over = {r.module for r in ranked if r.local is not None and r.local > r.limit}
            blocks = {".".join(m.split(".")[:2]) for m in over}  # a block or its fc
            top = ".".join(ranked[0].module.split(".")[:2])
            ok = blocks == unstable and (not unstable or top in unstable)
            bad += not ok
            first = ranked[0]
            lines.append(
                f"{label:22} budget {budget!s:>5}  rows {len(t.rows):3}  over-limit locally "
                f"{','.join(sorted(blocks)) or '-':28} first {first.module} ({first.type}) "
                f"local {first.local or 0:.3g} / limit {first.limit:.3g}  peak "
                f"{t.peak_bytes} B spilled {t.spilled_bytes} B  {wall:.3f} s  "
                f"{'as expected' if ok else 'NOT AS EXPECTED'}")
    text = "\n".join(lines)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
