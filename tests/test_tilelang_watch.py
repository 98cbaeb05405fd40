"""Watch mode with upstream-style TileLang kernel files: saving one re-runs its cells only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests._watch_util import WatchHarness, save

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[1]
UP = ROOT / "tests" / "fixtures" / "upstream_kernels"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "probes").mkdir(parents=True)
    (ws / "kernels").mkdir()
    shutil.copy(ROOT / "probes" / "tilelang_matrix.py", ws / "probes" / "tilelang_matrix.py")
    src = (UP / "unknown_args.py").read_text()
    (ws / "kernels" / "rows_a.py").write_text(src)
    (ws / "kernels" / "rows_b.py").write_text(src.replace("shift_rows", "shift_rows_b"))
    return ws


async def test_saving_a_kernel_file_reruns_that_files_cells_only(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    async with WatchHarness(ws) as h:
        first = [r for r in h.seen if r["type"] == "result"]
        assert {r["probe"] for r in first} == {
            "tilelang/rows_a[c,fp32]", "tilelang/rows_a[cuda,fp32]",
            "tilelang/rows_b[c,fp32]", "tilelang/rows_b[cuda,fp32]"}
        assert {r["status"] for r in first} == {"error"}

        a = ws / "kernels" / "rows_a.py"
        save(a, a.read_text() + '\nLAYA_ARGS = {"shift_rows": dict(M=64)}\n')
        got = [await h.until(lambda r: r["type"] == "result")]
        got += [r for r in await h.quiet(4.0) if r["type"] == "result"]
        # the mapped re-run may finish before the re-discovery that gives the new arguments
        # (the engine then runs the redefined cell again): only rows_a's cells, never rows_b's
        assert {r["probe"] for r in got} == {"tilelang/rows_a[c,fp32]",
                                             "tilelang/rows_a[cuda,fp32]"}
        last = {r["probe"]: r for r in got}
        for r in last.values():
            assert r["trigger"] == os.path.join("kernels", "rows_a.py")
            assert r["status"] == "error", r["result"].get("reason")
            assert "shift_rows needs N " in str(r["result"]["reason"])
