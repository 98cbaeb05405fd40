#!/usr/bin/env bash
# Create .venv at the repo root and install laya-tui with every extra that works here.
# Idempotent: re-runs only when pyproject.toml or constraints.txt changed.
#
# Extras: [all] (torch, transformers, TileLang, MLX), [dev], and [rbln] named on its own:
# the repository's tests cover torch-rbln installed without its runtime (laya-tui's workers
# guard its autoload). In this .venv a bare `import torch` then needs
# TORCH_DEVICE_BACKEND_AUTOLOAD=0 off an RBLN host; LAYA_EXTRAS=all,dev leaves it out.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${LAYA_EXTRAS:-all,rbln,dev}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "laya-tui needs Python >= 3.11, got " + sys.version.split()[0])'
want=$(cat pyproject.toml setup.py constraints.txt | sha256sum | cut -d' ' -f1)-$EXTRAS
stamp=.venv/.laya-setup-stamp
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "laya-tui: setting up .venv (extras: $EXTRAS; torch pinned to the 2.13.0 CPU build by constraints.txt)" >&2
quiet_pip() {  # pip, minus the harmless notes about absent local index folders, and minus
  # setuptools' "Editable installation ... Please be careful" box (our packages map probes/
  # and kernels/ inside laya_tui, which needs its import finder; nothing to act on)
  PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
    .venv/bin/python -m pip "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  return "${PIPESTATUS[0]}"
}
"$PY" -m venv .venv
quiet_pip install -q --upgrade pip
quiet_pip install -q -c constraints.txt -e ".[$EXTRAS]"
echo "$want" > "$stamp"
