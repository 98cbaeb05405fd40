"""Shared test setup: torch must be importable even with torch-rbln and no RBLN runtime."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from laya_tui.families.rbln_status import guard_autoload
from laya_tui.worker.shadow import keep_behind_installed

guard_autoload()

ROOT = Path(__file__).resolve().parents[1]
# the repository root goes behind the installed packages, as the worker puts a workspace
# (laya_tui/worker/shadow.py): its demo kernels/ folder must not stand in for the installed
# Hugging Face `kernels` that transformers imports (`kernels.gemm` still finds ours)
keep_behind_installed(str(ROOT))
os.environ.setdefault("LAYA_TUI_TEST", "1")

# user projects the tests run laya-tui on carry their own tests/: not this suite's
collect_ignore_glob = ["fixtures/*"]


# -- the fast tier -------------------------------------------------------------------------
#: Tests marked ``slow`` from one list (tests/slow_tests.txt: node ids; a parametrized
#: test's id without its brackets covers all its cases; `` #`` starts a comment), so
#: ``-m "not slow"`` stays the fast tier (CONTRIBUTING.md). A listed id no collected test
#: has fails the run: a renamed test is listed again, never silently fast.
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def _slow_ids() -> set[str]:
    lines = SLOW_LIST.read_text().splitlines() if SLOW_LIST.exists() else []
    return {ln.split(" #", 1)[0].strip() for ln in lines if not ln.startswith("#")} - {""}


def pytest_configure(config: pytest.Config) -> None:
    # A tier chosen by marker (``-m "not slow"``) leaves out snapshot tests whose snapshots
    # the full suite still uses: syrupy would fail the tier on them as "unused". The full
    # run (no -m) still fails on a snapshot no test uses.
    if config.getoption("markexpr", "") and hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: every collected test is seen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = _slow_ids()
    if not slow:
        return
    seen: set[str] = set()
    files = set()
    for item in items:
        nodeid = item.nodeid.removeprefix("tests/")
        files.add(nodeid.split("::", 1)[0])
        for key in (nodeid, nodeid.split("[", 1)[0]):
            if key in slow:
                item.add_marker(pytest.mark.slow)
                seen.add(key)
    # a file asked for test by test (``file.py::test``) is not checked as a whole
    partial = {os.path.basename(a.split("::", 1)[0]) for a in config.args if "::" in a}
    missing = sorted(s for s in slow - seen if s.split("::", 1)[0] in files
                     and os.path.basename(s.split("::", 1)[0]) not in partial)
    if missing:
        raise pytest.UsageError(f"{SLOW_LIST.name} lists tests that do not exist: "
                                + ", ".join(missing[:5]))
