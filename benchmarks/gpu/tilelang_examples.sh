#!/usr/bin/env bash
# On an H200 (any CUDA) host: laya-tui over TileLang's whole examples folder on target cuda:
# every cell lowered, built with TileLang's default execution backend (tvm_ffi) and run
# against the file's own check where the file has one; every failing cell's repro.py run.
#
#   bash benchmarks/gpu/tilelang_examples.sh EXAMPLES_DIR [REPORT.json] [SHARDS] [DEADLINE_S]
#
# Needs python3 with torch (CUDA) and tilelang importable (docs/gpu-hosts.md);
# laya-tui runs from this source tree. SHARDS laya-tui runs share the host's cores (nvcc
# builds are CPU-bound); cells unfinished at DEADLINE_S are counted as such.
set -euo pipefail
cd "$(dirname "$0")/../.."
examples=${1:?usage: tilelang_examples.sh EXAMPLES_DIR [REPORT.json] [SHARDS] [DEADLINE_S]}
out=${2:-benchmarks/results/gpu-h200-tilelang-examples.json}
shards=${3:-14}
deadline=${4:-420}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 TORCH_DEVICE_BACKEND_AUTOLOAD=0
export LAYA_TUI_TILELANG_CAPTURE_S=${LAYA_TUI_TILELANG_CAPTURE_S:-30}
mkdir -p "$(dirname "$out")"
"${PYTHON:-python3}" benchmarks/bench_tilelang_examples.py "$examples" \
  --only 'tilelang/*[cuda,*' --lower-only none --shards "$shards" --deadline "$deadline" \
  --repro-jobs "$shards" --repro-timeout 120 --json "$out" --keep "${LAYA_KEEP:-/tmp/laya-examples}" \
  ${LAYA_CELLS_JSON:+--cells-json "$LAYA_CELLS_JSON"}
