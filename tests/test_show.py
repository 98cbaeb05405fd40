"""``laya-tui show``: the dashboard over saved reports of every family (snapshots), the
machine environment and missing call sites of a report from elsewhere, re-run keys that say
why they are off, and clear exit-2 errors for files it cannot read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.cli.main import main
from laya_tui.cli.show import build_saved_app, source_line
from tests._tui import DEMO_REPORT, DEMO_WS, RECORDED, SIZE, TILELANG_REPORT

ENV_REPORT = RECORDED / "env_report.json"
AOTI_REPORT = RECORDED / "aoti_gpu_report.json"  # written on an H200 host (torch 2.11)
MLX_REPORT = RECORDED / "mlx_report.json"


def _app(path: Path, workspace: Path = DEMO_WS):
    report = json.loads(path.read_text())
    return build_saved_app(report, label=source_line(report, path.name), workspace=str(workspace),
                           path=path.name)


async def _settle(pilot) -> None:
    await pilot.app.settled()
    await pilot.pause()


def _drive(scope, keys=()):
    async def drive(pilot) -> None:
        await _settle(pilot)
        if scope is not None:
            pilot.app.main_screen.select_scope(scope)
            await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()

    return drive


# -- snapshots: one saved report per family ------------------------------------------------

def test_show_explain_demo(snap_compare):
    drive = _drive(("probe", "explain/tiny_llama_forward"), ("enter", "j", "j"))
    assert snap_compare(_app(DEMO_REPORT), terminal_size=SIZE, run_before=drive)


def test_show_env(snap_compare):
    assert snap_compare(_app(ENV_REPORT), terminal_size=SIZE,
                        run_before=_drive(("family", "env")))


def test_show_tilelang_matrix(snap_compare):
    drive = _drive(None, ("m", "right", "right", "right", "down"))
    assert snap_compare(_app(TILELANG_REPORT, Path("/nonexistent")), terminal_size=SIZE,
                        run_before=drive)


def test_show_aoti_from_a_gpu_host(snap_compare):
    drive = _drive(("probe", "aoti/decision[bf16,cuda]"), ("i",))
    assert snap_compare(_app(AOTI_REPORT, Path("/nonexistent")), terminal_size=SIZE,
                        run_before=drive)


@pytest.mark.skipif(not MLX_REPORT.exists(), reason="no recorded mlx report "
                    "(tests/fixtures/recorded/record.py mlx)")
def test_show_mlx(snap_compare):
    assert snap_compare(_app(MLX_REPORT), terminal_size=SIZE,
                        run_before=_drive(("family", "mlx")))


# -- behaviour ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_every_probe_and_signal_of_the_report_is_shown():
    report = json.loads(TILELANG_REPORT.read_text())
    app = _app(TILELANG_REPORT)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        assert list(app.model.probes) == [p["id"] for p in report["probes"]]
        assert len(app.model.rows) == sum(len(p["signals"]) for p in report["probes"])
        for p in report["probes"]:
            assert app.model.probes[p["id"]].status == p["status"]
        assert app.model.gates() == report["gates"]  # as recorded, not re-evaluated
        app.main_screen.select_scope(("probe", "tilelang/attn_kernel[c,fp16,gpu]"))
        await pilot.pause()
        await pilot.press("p")  # the runs plot: one recorded run
        await pilot.pause()
        from laya_tui.tui.screens.runs import RunsScreen

        assert isinstance(app.screen, RunsScreen)


@pytest.mark.asyncio
async def test_rerun_keys_say_why_they_are_off_and_nothing_runs():
    app = _app(DEMO_REPORT)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        runs = [len(st.runs) for st in app.model.probes.values()]
        for key in ("r", "R", "w"):
            await pilot.press(key)
            await pilot.pause()
        await _settle(pilot)
        notes = [n.message for n in app._notifications]
        assert sum("re-run is off: this is a saved report" in m for m in notes) == 3
        await pilot.press("e")
        await pilot.pause()
        assert any("export is off" in n.message for n in app._notifications)
        assert [len(st.runs) for st in app.model.probes.values()] == runs
        assert not app.watching
        assert getattr(app.runner, "config", None) is None  # the recorded runner only


@pytest.mark.asyncio
async def test_call_sites_whose_files_are_not_here_say_so(tmp_path):
    app = _app(DEMO_REPORT, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        screen = app.main_screen
        screen.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = screen.detail.plain_text()
        assert "call site" in text and "model.py:8(rms_norm)" in text
        assert "(source not readable here: model.py)" in text


@pytest.mark.asyncio
async def test_report_info_shows_the_writing_machine():
    app = _app(AOTI_REPORT)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        await pilot.press("i")
        await pilot.pause()
        from laya_tui.tui.screens.report_info import ReportInfoScreen

        assert isinstance(app.screen, ReportInfoScreen)
        import io

        from rich.console import Console

        from laya_tui.tui.screens.report_info import render_report_info

        console = Console(width=120, record=True, color_system=None, file=io.StringIO())
        console.print(render_report_info(app.screen.info))
        text = console.export_text()
        assert "torch           2.11.0" in text and "/opt/torch/.venv/bin/python3" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main_screen


# -- headless and errors ---------------------------------------------------------------------

def test_headless_prints_the_summary(capsys):
    assert main(["show", str(DEMO_REPORT), "--headless"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("saved report demo_report.json, host vm")
    assert "7 probes" in out and "crashed: faults/segfault" in out and "verdict: FAIL" in out


@pytest.mark.parametrize(("schema", "words"), [
    ("laya-tui.report/0", "has the old schema laya-tui.report/0"),
    ("laya-tui.report/99", "was written by a newer laya-tui (schema laya-tui.report/99"),
    ("something-else/1", "is not a laya-tui report"),
])
def test_older_newer_or_foreign_schema_is_exit_2(tmp_path, capsys, schema, words):
    doc = json.loads(DEMO_REPORT.read_text())
    doc["schema"] = schema
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"laya-tui show: error: {path}")
    assert words in err and "baseline" not in err


@pytest.mark.parametrize("content", ["", "{", "[1, 2]", '{"schema": "laya-tui.report/2"}',
                                     "\xff\xfe"])
def test_not_a_report_is_exit_2(tmp_path, capsys, content):
    path = tmp_path / "r.json"
    path.write_bytes(content.encode("latin-1"))
    assert main(["show", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_minimal_hand_written_report_shows(tmp_path, capsys):
    doc = {"schema": "laya-tui.report/2", "environment": None, "summary": {"probes": "x"},
           "gates": [{"name": "no-crash"}, 3],
           "probes": [{"id": "tilelang/k[c,fp32,gpu]", "status": "failed", "signals": [
               {"kind": "lowering", "passed": False, "reason": "no",
                "detail": {"kernel": "k", "target": "c", "dtype": "fp32", "spec": "gpu",
                           "outcome": "lower-failed"}}]}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert main(["show", str(path), "--html", str(tmp_path / "r.html"), "--trace",
                 str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "1 probes" in out and "gate FAIL no-crash" in out and "verdict: FAIL" in out


def test_missing_file_and_bad_flag_are_exit_2(tmp_path, capsys):
    assert main(["show", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["show", str(DEMO_REPORT), "--html", str(tmp_path / "no" / "x.html")]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["show"])  # argparse: usage line, exit 2
    assert exc.value.code == 2


BLOCK_HEAVY = """
import sys
for name in ("torch", "transformers", "tilelang", "tvm", "mlx", "torch_rbln", "numpy"):
    sys.modules[name] = None  # any import of these now raises ImportError
from laya_tui.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_show_works_without_torch_or_tilelang(tmp_path):
    """In a process where torch & co cannot be imported: summary, page and trace."""
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_HEAVY, "show", str(TILELANG_REPORT), "--html",
         str(tmp_path / "r.html"), "--trace", str(tmp_path / "t.json")],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "60 probes" in out.stdout
    assert (tmp_path / "r.html").stat().st_size > 10_000
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


@pytest.mark.asyncio
async def test_the_dashboard_opens_a_minimal_report_and_its_matrix(tmp_path):
    from laya_tui.report.saved import load_saved_report

    doc = {"schema": "laya-tui.report/1", "environment": {}, "summary": {}, "gates": [],
           "probes": [{"id": "tilelang/k[c,fp32,gpu]", "status": "failed", "signals": [
               {"kind": "lowering", "passed": False, "reason": "no C type",
                "site": {"file": "/gone/kernels/k.py", "line": 3},
                "detail": {"kernel": "k", "target": "c", "dtype": "fp32", "spec": "gpu",
                           "outcome": "lower-failed"}}]}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    report = load_saved_report(str(path))
    app = build_saved_app(report, label="minimal", workspace=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        from laya_tui.tui.screens.matrix import MatrixScreen

        assert isinstance(app.screen, MatrixScreen)
        await pilot.press("escape", "i")
        await pilot.pause()
        assert type(app.screen).__name__ == "ReportInfoScreen"


@pytest.mark.asyncio
async def test_a_report_read_after_the_first_frame():
    from laya_tui.cli.show import build_lazy_app

    app = build_lazy_app(str(TILELANG_REPORT), workspace=str(DEMO_WS))
    assert app.report_info["report"] is None  # nothing read before the app starts
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        assert len(app.model.probes) == 60 and app.model.fixed_gates
        assert app.model.source.startswith("saved report tilelang_report.json, host vm")
        assert app.exit_error is None


@pytest.mark.asyncio
async def test_a_truncated_report_ends_the_dashboard_with_exit_2(tmp_path):
    from laya_tui.cli.show import build_lazy_app, early_check

    path = tmp_path / "cut.json"
    path.write_text(TILELANG_REPORT.read_text()[:50_000])
    early_check(str(path))  # its first bytes name a readable schema
    app = build_lazy_app(str(path), workspace=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if app.exit_error:
                break
            await pilot.pause(0.02)
    assert app.return_code == 2
    assert app.exit_error.startswith(f"{path} is truncated")


def test_unreadable_schemas_fail_before_the_dashboard(tmp_path):
    from laya_tui.cli.show import early_check
    from laya_tui.core.errors import UsageError

    doc = json.loads(DEMO_REPORT.read_text())
    for schema in ("laya-tui.report/0", "laya-tui.report/6"):
        doc["schema"] = schema
        (tmp_path / "r.json").write_text(json.dumps(doc))
        with pytest.raises(UsageError):
            early_check(str(tmp_path / "r.json"))
    (tmp_path / "x.json").write_text("not json")
    with pytest.raises(UsageError):
        early_check(str(tmp_path / "x.json"))
    early_check(str(DEMO_REPORT))
