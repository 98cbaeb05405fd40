#!/usr/bin/env bash
# On an H200 (any CUDA) host: lower, build (nvcc), run and compare the upstream-style TileLang
# kernel files of tests/fixtures/upstream_kernels on target cuda, then print per-cell seconds.
#
#   bash benchmarks/gpu/upstream_kernels.sh [REPORT.json]
#
# Needs python3 with torch (CUDA) and tilelang importable (see docs/gpu-hosts.md for an
# offline install); laya-tui runs from this source tree, no install. Writes the report
# (default benchmarks/results/gpu-h200-upstream-kernels.json) and prints one line per cell:
# status, outcome, lower/build/run seconds, each output's max |diff| against ref_program and
# its limit, the slowest passes. no_args.py is left out: it exists to test the "could not be
# examined" error. Exit code: laya-tui's (0 every gate holds, 1 a gate failed).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-benchmarks/results/gpu-h200-upstream-kernels.json}
mkdir -p "$(dirname "$out")"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
only=()
for k in elementwise_add gemm gemm_autotune 'rms_norm.*' online_softmax mha_fwd scale_serial; do
  only+=(--only "tilelang/${k}[cuda,*")
done
rc=0
"$py" -m laya_tui --headless --no-cache --jobs 1 --json "$out" \
  --probes probes/tilelang_matrix.py --kernels tests/fixtures/upstream_kernels \
  --out "${LAYA_OUT:-/tmp/laya-upstream-kernels}" "${only[@]}" || rc=$?
"$py" - "$out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
env = {s["subject"]: s.get("value") for p in doc["probes"] for s in p["signals"]
       if s["kind"] == "environment"}
print(f"{'cell':45s} {'status':8s} {'outcome':12s} {'lower':>7s} {'build':>7s} {'run':>7s}  checks")
for p in doc["probes"]:
    if p["family"] != "tilelang":
        continue
    low = next((s for s in p["signals"] if s["kind"] == "lowering"), {})
    d = low.get("detail") or {}
    sec = d.get("seconds") or {}
    checks = ", ".join(f"{k} {c['value']:.3g}<={c['limit']:.3g}" + ("" if c["passed"] else " FAIL")
                       for k, c in (d.get("checks") or {}).items() if c.get("value") is not None)
    col = lambda k: f"{sec[k]:7.2f}" if k in sec else "      -"
    print(f"{p['id'][9:]:45s} {p['status']:8s} {str(d.get('outcome')):12s} {col('lower')} "
          f"{col('build')} {col('run')}  {checks or d.get('run_skipped') or p.get('reason') or ''}")
    slow = (d.get("passes") or {}).get("slowest") or []
    if slow:
        print("    slowest passes: " + ", ".join(f"{n} {s:.3f}s" for n, s, _ in slow[:4]))
print("total seconds:", doc["summary"]["seconds"])
PY
echo "laya-tui exit code: $rc; report: $out" >&2
exit "$rc"
