#!/usr/bin/env bash
# Run the probe families headless on a GPU host and write the report (default:
# benchmarks/results/gpu-report.json). Needs python3 with torch (CUDA) and, for the
# tilelang family, tilelang importable; laya-tui itself runs from this source tree and needs
# no install. Extra arguments go to laya-tui (e.g. --only 'tilelang/*').
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-benchmarks/results/gpu-report.json}
[ $# -gt 0 ] && shift
mkdir -p "$(dirname "$out")"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
rc=0
"${PYTHON:-python3}" -m laya_tui --headless --json "$out" --no-cache --jobs "${LAYA_JOBS:-3}" "$@" || rc=$?
echo "laya-tui exit code: $rc (0 gates hold, 1 a gate failed); report: $out" >&2
exit "$rc"
