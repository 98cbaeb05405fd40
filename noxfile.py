"""The version matrix laya-tui is tested on (issue 46): ``nox -l`` lists the sessions,
``nox -s 'textual(floor)'`` runs one. Each session installs this checkout with the
repository's pins (constraints.txt) except the one library it varies, then runs the fast
tests of the side that library touches. Install nox with ``pip install nox``.

- ``textual(floor|latest)``: the UI side alone (no torch: the dashboard never imports it),
  Textual 8.2.0 and the newest 8.x; the dashboard, show, serve and screenshot tests.
- ``torch(2.13.0|2.14.1)``: the worker side with that torch; 2.13.0 is the CPU build on
  this machine's disk, 2.14.1 exists on the registry only as the CUDA 13 build (555 MB plus
  the CUDA wheels), which this project does not install: not run yet (the GPU host lent to
  the project has torch 2.11 and no registry); it skips unless LAYA_NOX_CUDA_TORCH=1.
  torch 2.15 is untested (outside the range).
- ``tilelang(0.1.14|0.1.15)``: the TileLang family's fast tests with that release.

``.ci/run`` runs ``textual(floor)`` (about 100 s on 2 cores); the figures of every session are
in benchmarks/results/nox-matrix-46.txt. Keep the venvs out of the checkout:
``nox --envdir /tmp/laya-nox -s ...``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
ROOT = Path(__file__).parent
UI_TESTS = ["tests/test_show.py", "tests/test_tui_summary.py", "tests/test_tui_readable.py",
            "tests/test_screenshot.py", "tests/test_serve.py", "tests/test_version_ranges.py",
            "tests/test_tui_imports.py", "tests/test_tui_live.py", "tests/test_tui_model.py",
            "tests/test_tui_pilot.py", "tests/test_tui_repaint.py", "tests/test_tui_snapshots.py"]
TORCH_TESTS = ["tests/test_explain_probe.py", "tests/test_graph_breaks.py",
               "tests/test_env_compare.py", "tests/test_version_ranges.py"]
TILELANG_TESTS = ["tests/test_tilelang_probe.py", "tests/test_tilelang_labels.py",
                  "tests/test_env_tilelang.py",
                  # the two that expect per release (0.1.14: T.gemm's k_pack, no C infinity)
                  "tests/test_tilelang_anywhere.py", "tests/test_tilelang_file_run.py"]


def _install(session: nox.Session, extras: str, dist: str, version: str) -> None:
    """This checkout with ``extras``, pinned as the repository pins, ``dist`` at ``version``."""
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if not line.startswith(f"{dist}==")]
    constraints = Path(session.create_tmp()) / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    session.install("-c", str(constraints), "-e", f".[{extras}]", f"{dist}{version}")


def _pytest(session: nox.Session, tests: list[str]) -> None:
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                *tests, *session.posargs, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})


@nox.session(python="3.11")
@nox.parametrize("textual", [nox.param("==8.2.0", id="floor"),
                             nox.param(">=8.2,<9", id="latest")])
def textual(session: nox.Session, textual: str) -> None:
    """The dashboard's tests with the oldest and newest Textual of the stated range."""
    _install(session, "dev", "textual", textual)
    _pytest(session, UI_TESTS)


@nox.session(python="3.11")
@nox.parametrize("torch", [nox.param(v, id=v) for v in ("2.13.0", "2.14.1")])
def torch(session: nox.Session, torch: str) -> None:
    """The explain/env tests with that torch (2.14.1: only a CUDA build exists, not run)."""
    if torch != "2.13.0" and not os.environ.get("LAYA_NOX_CUDA_TORCH"):
        session.skip(f"torch {torch} exists on the registry only as the CUDA build (~3 GB with "
                     "its nvidia wheels); LAYA_NOX_CUDA_TORCH=1 installs it")
    _install(session, "torch,dev", "torch", f"=={torch}")
    _pytest(session, TORCH_TESTS)


@nox.session(python="3.11")
@nox.parametrize("tilelang", [nox.param(v, id=v) for v in ("0.1.14", "0.1.15")])
def tilelang(session: nox.Session, tilelang: str) -> None:
    """The TileLang family's fast tests with that release."""
    _install(session, "tilelang,dev", "tilelang", f"=={tilelang}")
    _pytest(session, TILELANG_TESTS)
