"""Are the fallbacks of compiled models true, and are the sites in the user's code?

Part 3 of benchmarks/bench_explain.py (``--fallbacks``), or on its own:

    .venv/bin/python benchmarks/bench_explain_fallbacks.py [--before DIR] [--models a,b]

Per model (the demo presets and five transformers architectures, random weights from
configs, no download): compile with Inductor (``dynamic=False``), a cold and a warm explain
region (``explain_steady``, the model called through laya-tui's own ``call_with`` like the
explain probe does), then one profiled warm call. Each model runs in its own subprocess, once
with the laya-tui of ``--before DIR`` (the old code) and once with this tree, so the same
compiles are measured by both. Printed side by side:

- fallback calls the cold / warm region report (graph breaks apart),
- the profiler's eager ATen kernels directly inside ``## Call CompiledFxGraph ... ##`` per
  call (all of them, and those the output code calls as ``torch.ops.aten.*``: the fallback
  kernels; the rest are ``extern_kernels.*`` GEMMs),
- the share of sited signals whose site is inside laya-tui (its package or ``probes/``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

MODELS = ("tiny_llama:fp32", "tiny_llama:bf16", "tiny_modernbert:fp32", "tiny_modernbert:bf16",
          "gpt2", "bert", "vit", "t5", "llama")


def build(name: str) -> tuple[Any, dict[str, Any]]:
    """``(model, inputs)`` of a benchmark model, seeded random weights."""
    import torch
    import transformers as tf

    from laya_tui.families import presets

    tf.utils.logging.set_verbosity_error()
    torch.manual_seed(0)
    batch = presets.token_batch([7, 5], pad_to=16)
    if name.startswith("tiny_"):
        preset, _, dt = name.partition(":")
        dtype = {"fp32": None, "bf16": torch.bfloat16}[dt]
        return getattr(presets, preset)(dtype), batch
    small: dict[str, Any] = dict(vocab_size=512, pad_token_id=0, bos_token_id=1,
                                 eos_token_id=2)
    cfg: Any
    model: Any
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, **small)
        model = tf.GPT2LMHeadModel
    elif name == "bert":
        cfg = tf.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64, **small)
        model = tf.BertModel
    elif name == "llama":
        cfg = tf.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                             num_key_value_heads=4, intermediate_size=160,
                             max_position_embeddings=64, **small)
        model = tf.LlamaForCausalLM
    elif name == "t5":
        cfg = tf.T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128,
                          num_heads=4, d_kv=16, **dict(small, decoder_start_token_id=0))
        model = tf.T5ForConditionalGeneration
        batch = dict(batch, decoder_input_ids=batch["input_ids"][:, :5])
    elif name == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, num_hidden_layers=2, hidden_size=64,
                           num_attention_heads=4, intermediate_size=128)
        model = tf.ViTModel
        batch = {"pixel_values": torch.randn(2, 3, 32, 32)}
    else:
        raise SystemExit(f"unknown model {name!r} (one of {', '.join(MODELS)})")
    cfg._attn_implementation = "sdpa"
    return model(cfg).eval(), batch


def _inside_laya(site: dict[str, Any] | None, root: str) -> bool:
    if not site:
        return False
    file = str(site.get("file", ""))
    own = (os.path.join(root, "laya_tui") + os.sep, os.path.join(root, "probes") + os.sep)
    demo = file.endswith("decision_model.py") or (
        file.endswith("presets.py") and "host_greedy_decode" in str(site.get("func")))
    return file.startswith(own) and not demo


def measure(name: str, device: str = "cpu") -> dict[str, Any]:
    """One model with the laya_tui found on sys.path, on ``device``; a JSON-able dict of the
    figures."""
    import torch
    from torch._inductor.codecache import PyCodeCache
    from torch.profiler import ProfilerActivity, profile

    import laya_tui
    from laya_tui.api import Context
    from laya_tui.families import presets
    from laya_tui.families.explain import explain_steady

    torch.set_num_threads(1)
    root = str(Path(laya_tui.__file__).resolve().parents[1])
    model, batch = build(name)
    model = model.to(device)
    batch = {k: v.to(device) for k, v in batch.items()}
    torch._dynamo.reset()
    fn = torch.compile(model, backend="inductor", dynamic=False)
    events: list[dict[str, Any]] = []
    ctx = Context("bench/fallbacks", "explain", events.append, opts={})
    loaded = set(getattr(PyCodeCache, "modules", []))
    t0 = time.perf_counter()
    with torch.no_grad():
        explain_steady(ctx, "forward", lambda: presets.call_with(fn, batch), warmup=1,
                       model=model, overhead_repeats=1)
        seconds = time.perf_counter() - t0
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            presets.call_with(fn, batch)
    inside = collections.Counter(  # ATen ops only (on CUDA, Triton launches are events too)
        e.name for e in prof.events() if e.cpu_parent is not None and e.name.startswith("aten::")
        and e.cpu_parent.name.startswith("## Call CompiledFxGraph"))
    source = ""
    for mod in getattr(PyCodeCache, "modules", []):
        if mod not in loaded and getattr(mod, "__file__", None):
            source += Path(mod.__file__).read_text()
    called = {f"aten::{m}" for m in re.findall(r"torch\.ops\.aten\.(\w+)\.\w+\(", source)}
    sigs = [e["signal"] for e in events if e["type"] == "signal"]
    torch._dynamo.reset()
    out: dict[str, Any] = {"laya_tui": root, "device": device, "seconds": round(seconds, 1),
                           "profiler_all": sum(inside.values()),
                           "profiler_fallback": sum(n for k, n in inside.items() if k in called),
                           "profiler_ops": dict(inside)}
    for phase in ("cold", "warm"):
        fb: collections.Counter[str] = collections.Counter()
        for s in sigs:
            if s["kind"] == "fallback" and s.get("subject") != "graph break" and \
                    (s.get("detail") or {}).get("phase") == phase:
                fb[s["subject"]] += int(s.get("count") or 0)
        out[f"fallback_{phase}"] = sum(fb.values())
        out[f"fallback_ops_{phase}"] = dict(fb)
    sited = [s for s in sigs if s.get("site")]
    mine = [s for s in sited if _inside_laya(s["site"], root)]
    out["sited"], out["sited_in_laya"] = len(sited), len(mine)
    out["laya_sites"] = sorted({f"{s['kind']}@{Path(s['site']['file']).name}:"
                                f"{s['site'].get('line')}" for s in mine})[:6]
    out["graph_breaks"] = sum(int(s.get("count") or 0) for s in sigs
                              if s.get("subject") == "graph break")
    return out


def _run(code: Path, name: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(code), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", name],
                          cwd=str(code), env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(lines[-1])


def compare(before: str | None, names: list[str] | None = None) -> None:
    """Every model with the old code (``before``) and this tree, side by side."""
    trees = ([("before", Path(before).resolve())] if before else []) + [("after", REPO)]
    print(f"\n[3] fallbacks of compiled models vs the profiler (Inductor, CPU, 1 thread); "
          f"load {os.getloadavg()[0]:.1f}")
    print("    fallback calls per region (cold/warm) by code tree; profiler: eager ATen kernels "
          "inside the compiled call per call (all / fallback kernels); sites in laya-tui")
    head = f"  {'model':22}" + "".join(f" {t + ' cold/warm':>17}" for t, _ in trees) + \
        f" {'profiler all/fb':>16}" + "".join(f" {t + ' laya sites':>18}" for t, _ in trees)
    print(head, flush=True)
    totals: dict[str, list[int]] = {t: [0, 0, 0, 0] for t, _ in trees}
    for name in names or list(MODELS):
        got = {t: _run(code, name) for t, code in trees}
        row = f"  {name:22}"
        prof = None
        for t, _ in trees:
            g = got[t]
            if "error" in g:
                row += f" {'error':>17}"
                continue
            row += f" {g['fallback_cold']:>8}/{g['fallback_warm']:<8}"
            prof = prof or g
            totals[t][0] += g["fallback_cold"] + g["fallback_warm"]
            totals[t][1] += g["sited"]
            totals[t][2] += g["sited_in_laya"]
            totals[t][3] += 2 * g["profiler_fallback"]
        row += f" {prof['profiler_all']:>9}/{prof['profiler_fallback']:<6}" if prof else \
            f" {'-':>16}"
        for t, _ in trees:
            g = got[t]
            row += f" {g.get('sited_in_laya', '-'):>8}/{g.get('sited', '-'):<9}" \
                if "error" not in g else f" {'-':>18}"
        print(row, flush=True)
        for t, _ in trees:
            g = got[t]
            if "error" in g:
                print(f"      {t}: {g['error']}", flush=True)
            elif g["sited_in_laya"]:
                print(f"      {t}: sites in laya-tui: {', '.join(g['laya_sites'])}", flush=True)
            if "error" not in g and g["fallback_ops_warm"]:
                ops = ", ".join(f"{k} x{v}" for k, v in sorted(g["fallback_ops_warm"].items()))
                print(f"      {t} warm fallbacks: {ops}", flush=True)
    for t, _ in trees:
        fb, sited, mine, truth = totals[t]
        share = mine / sited if sited else 0.0
        print(f"  {t}: {fb} fallback calls reported (the profiler: {truth} fallback-kernel "
              f"calls in those regions); {mine}/{sited} sited signals inside laya-tui "
              f"({share:.0%})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", help="one model, this process (prints one JSON line)")
    ap.add_argument("--before", default=None, help="an older laya-tui checkout to compare")
    ap.add_argument("--models", default=None, help="comma-separated subset of the models")
    ap.add_argument("--device", default="cpu", help="with --measure: cpu or cuda")
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.device)), flush=True)
        return 0
    compare(args.before, args.models.split(",") if args.models else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
