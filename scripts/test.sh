#!/usr/bin/env bash
# Set up .venv, then run the test suite (extra arguments go to pytest, e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The HTML report is tested in a real headless Chromium (Debian's package); without it and
# without root to install it, those tests skip with the install hint.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${LAYA_CHROMIUM:-}" ] \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "laya-tui: installing chromium for the HTML report tests (apt-get)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    >/dev/null 2>&1 || echo "laya-tui: could not install chromium; its tests will skip" >&2
fi
# Lint and types first (seconds): ruff over the code, mypy (pinned in the dev extra,
# configured in pyproject.toml) over the package and the tests (its `files`).
.venv/bin/python -m ruff check laya_tui probes kernels tests benchmarks
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
