"""Each worker gets the usable cores // ``--jobs`` intra-op threads (``OMP_NUM_THREADS``,
which torch reads), unless the user set it: two workers on two cores no longer run two
OpenMP threads each (issue 45)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from laya_tui.core.defaults import THREADS_VAR, usable_cores, worker_threads
from laya_tui.core.report_types import ResultDict
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions

PROBE = textwrap.dedent("""
    import os
    from laya_tui import probe

    @probe("threads")
    def seen(ctx):
        import torch
        ctx.log("threads", subject="threads", detail={"env": os.environ.get("OMP_NUM_THREADS"),
                                           "torch": torch.get_num_threads()})
""")


def _seen(tmp_path: Path, jobs: int) -> dict[str, object]:
    pytest.importorskip("torch")
    probes = tmp_path / "probes"
    probes.mkdir(exist_ok=True)
    (probes / "p.py").write_text(PROBE)
    config = RunOptions(workspace=str(tmp_path), probes=(str(probes),), jobs=jobs,
                        cache_dir=str(tmp_path / "cache"), use_cache=False)

    async def go() -> list[ResultDict]:
        runner = Runner(config)
        try:
            return await runner.run((await runner.discover()).probes)
        finally:
            await runner.close()

    (result,) = asyncio.run(go())
    assert result["status"] == "ok", {k: v for k, v in result.items() if k != "budget"}
    (log,) = [s for s in result["signals"] if s["kind"] == "log"]
    return dict(log["detail"] or {})


def test_the_rule() -> None:
    cores = usable_cores()
    assert worker_threads(1) == cores
    assert worker_threads(cores) == 1
    assert worker_threads(cores * 4) == 1  # never none
    assert worker_threads(0) == cores


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_worker_runs_with_its_share_of_the_cores(tmp_path: Path, jobs: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS_VAR, raising=False)
    seen = _seen(tmp_path, jobs)
    assert seen == {"env": str(worker_threads(jobs)), "torch": worker_threads(jobs)}


@pytest.mark.skipif(usable_cores() < 2, reason="one core: the rule gives 1 thread as well")
def test_the_users_own_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_VAR, "1")  # where --jobs 1 would give every core
    assert _seen(tmp_path, 1) == {"env": "1", "torch": 1}
