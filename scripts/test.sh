#!/usr/bin/env bash
# Set up .venv, then run the test suite (extra arguments go to pytest, e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
