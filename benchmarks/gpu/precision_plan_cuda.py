"""On a CUDA host: the precision plan search with the bf16 model on the GPU and the fp32
reference on the CPU (as the explain probe runs it), on the test models with known answers.

    PYTHONPATH=. python3 benchmarks/gpu/precision_plan_cuda.py [OUT.txt]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

import torch  # noqa: E402

sys.path.append(os.path.join(os.path.dirname(__file__), "..", ".."))

from laya_tui.families.explain import precision_plan as pp  # noqa: E402
from tests.test_precision_plan import LIMIT, build, fails_in_fp32  # noqa: E402

MODELS = [("one unstable (scss)", lambda: build("scss"), ["blocks.1"]),
          ("two unstable (cscs)", lambda: build("cscs"), ["blocks.0", "blocks.2"]),
          ("+512/-512 hand-off (sud)", lambda: build("sud"), ["blocks.1", "blocks.2"]),
          ("fine in bf16 (ssss)", lambda: build("ssss"), []),
          ("fails in fp32 too", fails_in_fp32, []),
          ("five of 16", lambda: build("csssscsscssscssc"), None)]


def main() -> int:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    lines = [f"precision plan on {dev} ({torch.cuda.get_device_name() if dev == 'cuda' else ''}"
             f"), torch {torch.__version__}: model on {dev}, fp32 reference on the CPU"]
    for name, make, want in MODELS:
        model, ref, x = make()
        model = model.to(dev)
        expect = ref(x).detach()
        xd = x.to(dev, torch.bfloat16)

        def check(out, expect=expect):
            err = float((out.float().cpu() - expect).abs().max())
            return err, err <= LIMIT

        plan = pp.search_plan(model, lambda m, xd=xd: m(xd), check, LIMIT, reference=ref,
                              forward_reference=lambda m, x=x: m(x))
        ver = "-" if plan.verified_error is None else pp._fmt(plan.verified_error)
        ok = want is None or sorted(plan.fp32_modules) == sorted(want)
        lines.append(f"{name:<28} {plan.status:<13} fwd {plan.forwards:>3} "
                     f"{plan.seconds:7.3f} s  verified {ver:>8} "
                     f"limit {LIMIT}  {','.join(plan.fp32_modules) or '-'}"
                     f"{'' if ok else '  (CPU plan: ' + ','.join(want or []) + ')'}")
        print(lines[-1], flush=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        from tests.test_precision_plan import CLI_MODEL  # the CLI test's factory, for a run
        with open(os.path.join(os.path.dirname(sys.argv[1]), "pp_cli_model.py"), "w",
                  encoding="utf-8") as fh:
            fh.write(CLI_MODEL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
