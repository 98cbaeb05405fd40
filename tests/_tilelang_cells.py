"""TileLang cells of a kernel folder, found and run in this process the way a worker runs
them (shared by the tests of upstream-style and file-run-style kernel files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.discover import matrix_cells
from laya_tui.families.tilelang.records import CellDict

ROOT = Path(__file__).resolve().parents[1]


def folder_cells(folder: Path, **opts: Any) -> dict[str, CellDict]:
    """``{"name[id]": cell}`` of every cell discovery finds in ``folder``."""
    opts.setdefault("workspace", str(ROOT))
    return {f"{c['name']}[{c['id']}]": c for c in matrix_cells({"kernels": [str(folder)],
                                                                **opts})}


def run_folder_cell(cid: str, out: Path, folder: Path,
                    add_dep: Any = None) -> tuple[str, list[SignalDict]]:
    """Run one cell of ``folder``: ``(status, its signals)``; a skip or a probe error gives
    ``"skipped: reason"`` / ``"error: reason"``. ``add_dep`` receives the files it depends on."""
    from laya_tui.api import Context, Skipped, Unexamined
    from laya_tui.families.tilelang.cell import run_cell

    signals: list[SignalDict] = []
    ctx = Context("tilelang/" + cid, "tilelang", lambda e: signals.append(e["signal"]),
                  opts={"out": str(out), "workspace": str(ROOT)},
                  add_dep=add_dep or (lambda p: None))
    try:
        run_cell(ctx, **folder_cells(folder)[cid]["kwargs"])
    except Skipped as exc:
        return f"skipped: {exc}", signals
    except Unexamined as exc:
        return f"error: {exc}", signals
    return ("failed" if ctx.failures else "ok"), signals


def own_run(folder: Path, name: str) -> str:
    """The last line ``python folder/name`` writes to stderr, its run failing (the file's
    own verdict, to hold a cell's reason to)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(folder / name)], capture_output=True,
                          text=True, timeout=300, cwd=folder)
    assert proc.returncode != 0
    return proc.stderr.strip().splitlines()[-1]
