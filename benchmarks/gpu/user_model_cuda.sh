#!/usr/bin/env bash
# On a GPU host: a user model (benchmarks/gpu/user_model/port_model.py, bf16) through
# laya-tui with --device cuda, then its host bounces, graph breaks, compiles/recompiles and
# the drift curve, printed from the report. Needs python3 with torch (CUDA); laya-tui runs
# from this source tree, no install. Writes benchmarks/results/gpu-h200-user-model.json
# (or $1). Usage: bash benchmarks/gpu/user_model_cuda.sh [REPORT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-benchmarks/results/gpu-h200-user-model.json}
[ $# -gt 0 ] && shift
mkdir -p "$(dirname "$out")"
export PYTHONPATH="$PWD:$PWD/benchmarks/gpu/user_model${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else
  "no CUDA device: this script is for a GPU host")'
rc=0
# the workspace is the tiny user project: its [tool.laya-tui] sets models and device = cuda
"$py" -m laya_tui --headless --json "$out" --no-cache --jobs 1 \
  --workspace benchmarks/gpu/user_model --probes probes \
  --only 'explain/model:*' --device cuda "$@" || rc=$?
echo "laya-tui exit code: $rc (0 gates hold, 1 a gate failed); report: $out" >&2
"$py" - "$out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for p in report["probes"]:
    print(f"\n== {p['id']}: {p['status']} {p.get('reason') or ''} ({p['seconds']:.1f} s)")
    for s in p.get("signals", []):
        d = s.get("detail") or {}
        site = s.get("site") or {}
        where = f"{site.get('file', '').rsplit('/', 1)[-1]}:{site.get('line')}" if site else ""
        if s["kind"] == "host_bounce":
            print(f"  host_bounce [{d.get('phase')}] {s.get('subject')} x{s.get('count')} "
                  f"{s.get('bytes') or 0} B {where}: {s.get('reason')}")
        elif s["kind"] in ("compile", "recompile") or s.get("subject") == "graph break":
            print(f"  {s['kind']} [{d.get('phase')}] {s.get('subject')} x{s.get('count')} "
                  f"{where}: {(s.get('reason') or '')[:90]} {d.get('input_set') or ''}")
        elif s["kind"] == "tolerance":
            drift = d.get("drift") or {}
            first = drift.get("first_past_limit")
            print(f"  tolerance {s['subject']}: {s['value']:.4g} (limit {s['limit']:.4g}) "
                  f"passed={s['passed']}; drift starts at: "
                  f"{first['module'] + ' ' + str(first['max_diff']) if first else 'none'}")
            for name, diff, limit in drift.get("curve", []):
                print(f"    {name:28} max|diff| {diff!s:>10}  limit {limit}")
PY
exit "$rc"
