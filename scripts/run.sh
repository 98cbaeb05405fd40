#!/usr/bin/env bash
# Set up .venv, then run laya-tui: the dashboard on a terminal; without one, the headless
# run writing laya-report.json (extra arguments go to laya-tui).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ] && ! { [ -t 0 ] && [ -t 1 ]; }; then
  exec .venv/bin/laya-tui --headless --json laya-report.json
fi
exec .venv/bin/laya-tui "$@"
