"""Precision plan benchmark: what the search spends and how close its plan is to the smallest.

Usage: .venv/bin/python benchmarks/bench_precision_plan.py [--out FILE] [--max-exhaustive N]

Per model (the test models of tests/test_precision_plan.py, larger ones built the same way,
and the demo's tiny Llama / ModernBERT in bf16): forwards and seconds the search spends
(CPU, eager), its plan size against the smallest plan found by exhaustive search (every
subset of the model's called modules by increasing size; models with at most
``--max-exhaustive`` candidate modules), the verified error against the limit, and for the
demo models, whose bf16 output holds the cell's limit, whether the search stays quiet.
The demo's limit is also tightened to a value between its fp32 and its bf16 error, so the
search runs on a real transformers model (exhaustive search is out of reach there).
Writes the table to benchmarks/results/precision-plan.txt (``--out``).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import sys
import time
from typing import Any

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # torch-rbln without its runtime

import torch  # noqa: E402

sys.path.append(os.path.join(os.path.dirname(__file__), ".."))  # last: ./kernels shadows a package

from laya_tui.families.explain import precision_plan as pp  # noqa: E402
from tests.test_precision_plan import LIMIT, Cancel, Net, build, fails_in_fp32  # noqa: E402

torch.set_num_threads(1)


def called_modules(model: Any, forward: Any) -> list[str]:
    """Non-root modules whose forward runs (a ModuleList never does), in return order."""
    names = {id(m): n for n, m in model.named_modules()}
    seen: list[str] = []

    def hook(m: Any, _a: Any, _o: Any) -> None:
        n = names[id(m)]
        if n and n not in seen:
            seen.append(n)

    hs = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        with torch.no_grad():
            forward(model)
    finally:
        for h in hs:
            h.remove()
    return seen


#: Exhaustive search gives up past this many forwards (the row says "too many").
MAX_EXHAUSTIVE_FORWARDS = 13000


def exhaustive(model: Any, ref: Any, forward: Any, check: Any, max_n: int
               ) -> tuple[int | str | None, int, float]:
    """(smallest passing plan size, forwards, seconds), subsets by increasing size; the
    size is ">=k" when every subset smaller than k failed and the cap stopped the search,
    None when the model has more than ``max_n`` candidate modules."""
    cands = called_modules(model, forward)
    if len(cands) > max_n:
        return None, 0, 0.0
    applier = pp.Applier(model, ref)
    t0, n = time.perf_counter(), 0
    for k in range(1, len(cands) + 1):
        for subset in itertools.combinations(cands, k):
            if pp.normalize(list(subset)) != list(subset):
                continue  # a kept module already covers its submodules
            if n >= MAX_EXHAUSTIVE_FORWARDS:
                return f">={k}", n, time.perf_counter() - t0
            with applier.applied(list(subset)) as m, torch.no_grad():
                n += 1
                if check(forward(m))[1]:
                    return k, n, time.perf_counter() - t0
    return None, n, time.perf_counter() - t0


class Nested(torch.nn.Module):
    """A block with two sub-blocks: the cancellation sits two levels down."""

    def __init__(self, unstable: bool) -> None:
        super().__init__()
        self.attn = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
        self.mlp: torch.nn.Module = Cancel() if unstable else torch.nn.Sequential(
            torch.nn.Linear(16, 16), torch.nn.Tanh())

    def forward(self, x):
        return self.mlp(self.attn(x))


def nested(pattern: str) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    ref = Net("s" * len(pattern)).eval()
    ref.blocks = torch.nn.ModuleList([Nested(c == "c") for c in pattern])
    x = torch.randn(8, 16).to(torch.bfloat16).float()
    return copy.deepcopy(ref).to(torch.bfloat16), ref, x


TOY = [
    ("one unstable (scss)", lambda: build("scss")),
    ("two unstable (cscs)", lambda: build("cscs")),
    ("+512/-512 hand-off (sud)", lambda: build("sud")),
    ("fine in bf16 (ssss)", lambda: build("ssss")),
    ("fails in fp32 too", fails_in_fp32),
    ("three of 10 (scsscssscs)", lambda: build("scsscssscs")),
    ("nested, two of 6 (scsscs)", lambda: nested("scsscs")),
    ("five of 16", lambda: build("csssscsscssscssc")),
]


def toy_row(name: str, make: Any, max_n: int) -> str:
    model, ref, x = make()
    want = ref(x).detach()
    xb = x.to(torch.bfloat16)

    def check(out: Any) -> tuple[float, bool]:
        err = float((out.float() - want).abs().max())
        return err, err <= LIMIT

    plan = pp.search_plan(model, lambda m: m(xb), check, LIMIT, reference=ref,
                          forward_reference=lambda m: m(x))
    smallest, ex_fw, ex_s = (None, 0, 0.0)
    if plan.status == pp.FOUND:
        smallest, ex_fw, ex_s = exhaustive(model, ref, lambda m: m(xb), check, max_n)
    return _row(name, plan, smallest, ex_fw, ex_s, len(called_modules(model, lambda m: m(xb))))


def _row(name: str, plan: pp.Plan, smallest: int | str | None, ex_fw: int, ex_s: float,
         n_mod: int) -> str:
    size = len(plan.fp32_modules) if plan.status == pp.FOUND else "-"
    best = smallest if smallest is not None else ("-" if plan.status != pp.FOUND
                                                   else "not run")
    err = pp._fmt(plan.verified_error) if plan.verified_error is not None else "-"
    return (f"{name:<38} {n_mod:>4} {plan.status:<13} {plan.forwards:>4} "
            f"{plan.seconds:>7.3f} {size!s:>5} {best!s:>8} {ex_fw:>6} {ex_s:>7.2f} "
            f"{pp._fmt(plan.baseline_error):>8} {err:>8} {plan.limit:>7.3g}  "
            f"{','.join(plan.fp32_modules)}")


def demo_rows(max_n: int) -> list[str]:
    from laya_tui.families import presets
    from laya_tui.families.tolerance import logits_verdict

    rows = []
    for preset in ("tiny_llama", "tiny_modernbert"):
        build_fn = getattr(presets, preset)
        model, ref = build_fn(torch.bfloat16), build_fn(None)
        batch = presets.token_batch([7, 5])
        mask = batch["attention_mask"].bool()
        name_out = "logits" if preset == "tiny_llama" else "last_hidden_state"
        with torch.no_grad():
            want = getattr(ref(**batch), name_out).float()

        def fwd(m: Any, batch: Any = batch) -> Any:
            return m(**batch)

        for limit, label in ((0.05, "cell limit"), (None, "limit tightened")):
            if limit is None:  # between the bf16-rounded fp32 output and the bf16 error
                with torch.no_grad():
                    base = _err(getattr(model(**batch), name_out), want, mask)
                    floor = _err(getattr(ref(**batch), name_out).to(torch.bfloat16), want,
                                 mask)
                limit = float(f"{(base * floor * 1.5) ** 0.5:.3g}")

            def check(out: Any, limit: float = limit, name_out: str = name_out,
                      want: Any = want, mask: Any = mask) -> tuple[float, bool]:
                t = getattr(out, name_out).float()
                if name_out == "logits":
                    v = logits_verdict(t, want, atol=limit, mask=mask)
                    return float(v["value"]), bool(v["passed"])
                e = _err(t, want, mask)
                return e, e <= limit

            plan = pp.search_plan(model, fwd, check, limit, reference=ref,
                                  forward_reference=fwd, mask=mask)
            smallest, ex_fw, ex_s = (None, 0, 0.0)
            if plan.status == pp.FOUND:
                smallest, ex_fw, ex_s = exhaustive(model, ref, fwd, check, max_n)
            rows.append(_row(f"{preset} bf16, {label}", plan, smallest, ex_fw, ex_s,
                             len(called_modules(model, fwd))))
    return rows


def _err(out: Any, want: Any, mask: Any) -> float:
    return float((out.float() - want).abs()[mask].max())


HEADER = (f"{'model':<38} {'mods':>4} {'status':<13} {'fwd':>4} {'seconds':>7} {'plan':>5} "
          f"{'smallest':>8} {'ex.fwd':>6} {'ex.s':>7} {'bf16 err':>8} {'verified':>8} "
          f"{'limit':>7}  fp32 modules")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "precision-plan.txt"))
    ap.add_argument("--max-exhaustive", type=int, default=64)
    ap.add_argument("--skip-demo", action="store_true")
    args = ap.parse_args()
    lines = [f"precision plan search, CPU eager, torch {torch.__version__}, 1 thread; "
             f"budget {pp.MAX_FORWARDS} forwards / {pp.MAX_SECONDS:g} s",
             "fwd/seconds: the search (reference run included); smallest/ex.fwd/ex.s: "
             "exhaustive search over subsets of the called modules", HEADER]
    print("\n".join(lines), flush=True)
    for name, make in TOY:
        lines.append(toy_row(name, make, args.max_exhaustive))
        print(lines[-1], flush=True)
    if not args.skip_demo:
        for row in demo_rows(args.max_exhaustive):
            lines.append(row)
            print(row, flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
