"""Pilot tests: the real app, fed recorded signals, driven by keys like a user would."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from laya_tui.core.replay import RecordedRunner
from laya_tui.report.document import validate_report
from laya_tui.tui.screens.main import MainScreen
from laya_tui.tui.screens.matrix import MatrixScreen
from laya_tui.tui.screens.runs import RunsScreen, timing_series, tolerance_series
from laya_tui.tui.screens.signal import SignalScreen
from laya_tui.tui.widgets.detail import DetailPane
from laya_tui.tui.widgets.matrix import LoweringMatrix
from tests._tui import (
    DEMO_WS,
    REPO,
    SIZE,
    TILELANG_REPORT,
    MessageLog,
    recorded_app,
)

pytestmark = pytest.mark.asyncio


async def test_recorded_run_fills_tree_table_and_header():
    log = MessageLog()
    app = recorded_app()
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled()
        await pilot.pause()
        main = app.main_screen
        assert isinstance(main, MainScreen)
        assert len(app.model.probes) == 7
        assert app.model.status_counts()["crashed"] == 1
        assert main.table.row_count == 14
        assert log.of("ProbesDiscovered")[0].count == 7
        assert log.of("RunCompleted")[-1].what == "all"
        # events were coalesced: far fewer RunUpdated messages than runner events
        updates = log.of("RunUpdated")
        events = sum(m.changes.events for m in updates)
        assert events >= 7 * 3 + 14
        assert len(updates) * 5 < events
        status = str(main.query_one("#summary-gates").render())
        assert "FAIL" in status and "no-crash (1)" in status


async def test_drill_down_family_probe_signal_and_back():
    log = MessageLog()
    app = recorded_app()
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled()
        main = app.main_screen
        await pilot.press("j", "j", "j")  # all -> env -> demo_facts -> explain
        await pilot.pause()
        assert main.scope == ("family", "explain")
        assert main.table.row_count == 11
        await pilot.press("enter")  # family: drill to its first probe
        await pilot.pause()
        assert main.scope == ("probe", "explain/tiny_llama_forward")
        assert main.table.row_count == 8
        await pilot.press("enter")  # probe: into its signals
        await pilot.pause()
        assert app.focused is main.table
        await pilot.press("j", "j")
        await pilot.pause()
        key = main.table.cursor_key
        assert key is not None
        assert app.model.rows[key].sig["subject"] == "aten::_softmax"
        assert log.of("SignalHighlighted")[-1].key == key
        await pilot.press("enter")  # signal: full detail
        await pilot.pause()
        assert isinstance(app.screen, SignalScreen) and app.screen.key == key
        assert log.of("SignalChosen")[-1].key == key
        text = app.screen.query_one("#full-detail", DetailPane).plain_text()
        assert "query length 7 is not a multiple of 32" in text
        assert "pad prompts to a multiple of 32 tokens" in text
        assert "model.py:23(attention)" in text
        assert "scores = scores + mask" in text  # the source excerpt around the line
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main
        await pilot.press("escape")  # table -> tree
        await pilot.pause()
        assert app.focused is main.tree
        await pilot.press("escape")  # probe -> its family
        await pilot.pause()
        assert main.scope == ("family", "explain")


async def test_filter_kind_only_failing_and_sort_on_raw_bytes():
    log = MessageLog()
    app = recorded_app()
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled()
        main = app.main_screen
        table = main.table
        await pilot.press("slash", *"fallback")
        await pilot.pause()
        assert set(table.column_values("kind")) == {"fallback"}
        assert table.row_count == 4
        await pilot.press("enter")  # keep the filter, back to the table
        # sort by bytes: 4 presses of s = kind, subject, count, bytes (descending first)
        await pilot.press("s", "s", "s", "s")
        await pilot.pause()
        assert log.of("SortChanged")[-1].column == "bytes"
        # 1.5 MiB > 256 KiB > 128 KiB > 64 KiB: numeric order, not text order
        assert table.column_values("bytes") == ["1.5 MiB", "256.0 KiB", "128.0 KiB", "64.0 KiB"]
        await pilot.press("S")
        await pilot.pause()
        assert table.column_values("bytes") == ["64.0 KiB", "128.0 KiB", "256.0 KiB", "1.5 MiB"]
        await pilot.press("escape", "escape")  # leave the table, clear nothing
        await pilot.press("slash")
        await pilot.press("escape")  # Esc in the filter box clears it
        await pilot.pause()
        assert table.filter.text == ""
        assert table.row_count == 14
        await pilot.press("f")  # only failing
        await pilot.pause()
        subjects = set(table.column_values("subject"))
        assert "hidden_states" in subjects and "logits" not in subjects
        assert all(app.model.rows[k].failing for k in table.keys())
        await pilot.press("f", "t")  # every kind, then the first kind present
        await pilot.pause()
        assert table.filter.kind == "environment"
        assert table.column_values("kind") == ["environment"]


async def test_rows_update_by_key_on_rerun_and_runs_history(tmp_path):
    app = recorded_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        main = app.main_screen
        main.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.pause()
        before = {k: app.model.rows[k] for k in main.table.keys()}
        await pilot.press("r")
        await app.settled()
        await pilot.pause()
        # r re-ran the selected probe only: every other probe still has its first run
        reruns = {pid for pid, st in app.model.probes.items() if len(st.runs) > 1}
        assert reruns == {"explain/tiny_llama_forward"}
        after = {k: app.model.rows[k] for k in main.table.keys()}
        assert list(after) == list(before)  # same keys, same order: updated in place
        assert all(after[k] is before[k] for k in after)  # the very same row objects
        st = app.model.probes["explain/tiny_llama_forward"]
        assert [r.run for r in st.runs] == [1, 2]
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("r")
        await app.settled()
        await pilot.pause()
        assert [r.run for r in st.runs] == [1, 2, 3]
        assert tolerance_series(st.runs) == {"logits": [(1, 0.0123), (2, 0.0123), (3, 0.0123)]}
        assert [p[0] for p in timing_series(st.runs)["prefill"]] == [1, 2, 3]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main


async def test_export_writes_a_valid_report(tmp_path):
    log = MessageLog()
    app = recorded_app(tmp_path)
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled()
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await pilot.pause()
        exported = log.of("ReportExported")
        assert exported and exported[-1].path == str(tmp_path / "report.json")
        report = json.loads((tmp_path / "report.json").read_text())
        validate_report(report)
        assert len(report["probes"]) == 7
        assert report["summary"]["passed"] is False


async def test_lowering_matrix_from_a_real_tilelang_run():
    app = recorded_app(report=TILELANG_REPORT, workspace=str(REPO))
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MatrixScreen)
        matrix = app.screen.query_one(LoweringMatrix)
        grid = matrix.outcome_grid()
        assert set(grid) == {"gemm_kernel", "gemm_geglu_kernel", "add_ln_kernel", "rope_kernel",
                             "attn_kernel"}
        assert grid["gemm_kernel"]["c·fp32·cpu"] == "ran"  # the CPU specialization works
        assert grid["add_ln_kernel"]["c·fp32·gpu"] == "lower-failed"  # the GPU one does not
        assert grid["gemm_kernel"]["c·fp16·cpu"] == "skipped"
        await pilot.press("right")  # add_ln_kernel, c·fp32·gpu
        await pilot.pause()
        text = app.screen.query_one("#cell-detail", DetailPane).plain_text()
        assert "lower-failed" in text and "local.fragment" in text
        assert "call site" in text and "kernels/add_ln.py:30" in text
        assert "tl.LowerTileOp" in text
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SignalScreen)
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_crashed_probe_shows_stderr_tail():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        app.main_screen.select_scope(("probe", "faults/segfault"))
        await pilot.pause()
        text = app.main_screen.detail.plain_text()
        assert "crashed" in text and "worker killed by SIGSEGV" in text
        assert "stderr tail" in text and "about to segfault" in text


async def test_palette_jumps_to_a_probe_and_quit_closes_the_runner():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"go to probe hangs")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.main_screen.scope == ("probe", "faults/hangs")
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        runner = app.runner
        assert isinstance(runner, RecordedRunner)
        await pilot.press("q")
        await pilot.pause()
    assert runner.killed and runner.closed
    assert app.return_code == 0


async def test_watch_is_refused_for_a_recording():
    app = recorded_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await app.settled()
        await pilot.press("w")
        await pilot.pause()
        assert not app.watching
        shown = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("watch mode needs live probes" in text for text in shown), shown


async def test_o_opens_the_call_site_in_the_editor_at_its_line(tmp_path, monkeypatch):
    args = tmp_path / "args"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$@" > {args}\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = recorded_app()
    # the headless test driver cannot hand the terminal over; the editor still runs for real
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        app.main_screen.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.press("enter", "o")
        await pilot.pause()
    assert args.read_text().split() == ["+8", str(DEMO_WS / "model.py")]


async def test_clicking_a_column_header_sorts_by_it():
    log = MessageLog()
    app = recorded_app()
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled()
        table = app.main_screen.table
        column = table.column_x("bytes")
        assert column is not None
        x = column + 2  # inside the "bytes" header
        await pilot.click("#signals", offset=(x, 0))
        await pilot.pause()
        assert (log.of("SortChanged")[-1].column, log.of("SortChanged")[-1].reverse) == \
            ("bytes", True)
        values = [app.model.rows[k].sig.get("bytes") for k in table.keys()]
        present = [v for v in values if v is not None]
        assert present == sorted(present, reverse=True) and values[: len(present)] == present
        await pilot.click("#signals", offset=(x, 0))  # again: ascending
        await pilot.pause()
        assert log.of("SortChanged")[-1].reverse is False


def _flood_report(tmp_path, n: int):
    """A recorded report of one probe with ``n`` fallback signals (op_0, op_1, ...)."""
    sigs = [{"kind": "fallback", "subject": f"op_{i}", "count": 1, "reason": "r"}
            for i in range(n)]
    path = tmp_path / "flood.json"
    path.write_text(json.dumps({"probes": [
        {"id": "flood/many", "family": "flood", "status": "ok", "reason": None,
         "seconds": 1.0, "cached": False, "deps": [], "signals": sigs, "log_tail": ""}],
        "errors": []}))
    return path


async def test_a_burst_of_rows_is_taken_in_over_several_ticks_and_none_is_lost(tmp_path,
                                                                               monkeypatch):
    """Filtered, the table takes streamed rows in under a time budget per tick (a zero
    budget: one chunk per tick); every row arrives, in order, and the status line counts
    them all. Unfiltered, the rows are the model's own lists: nothing waits."""
    from laya_tui.tui.widgets import signal_table

    monkeypatch.setattr(signal_table, "PENDING_CHUNK", 50)
    n = 5000
    app = recorded_app(report=_flood_report(tmp_path, n), autorun=False)
    waited: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        main = app.main_screen
        table = main.table
        table.budget = 0.0
        main.set_kind("fallback")  # a filter: the table keeps its own list
        apply = table.apply

        def spy(*args, **kwargs):
            apply(*args, **kwargs)
            waited.append(table.pending)

        monkeypatch.setattr(table, "apply", spy)
        app.start_run()
        await app.settled()
        await pilot.pause()
        assert max(waited) > 0  # some rows waited for a later tick
        assert table.pending == 0 and table.row_count == n
        assert table.column_values("subject") == [f"op_{i}" for i in range(n)]
        assert f"{n:,} rows" in str(main.query_one("#table-status").render())
        main.clear_filter()  # the model's lists, at once
        await pilot.pause()
        assert table.pending == 0 and table.row_count == n
        assert table.column_values("subject")[-1] == f"op_{n - 1}"


async def _gates_settled(app, pilot) -> None:
    """Until the app has no gates left to evaluate (its thread job ran), then one pause."""
    import asyncio

    await app.settled()
    for _ in range(200):
        if not app.model.gates_wanted:
            break
        await asyncio.sleep(0.02)
    await pilot.pause()


async def test_gates_over_many_signals_are_evaluated_off_the_loop_and_then_shown(monkeypatch):
    """With a baseline the gates read every signal; past GATES_IN_THREAD_ABOVE the summary
    says 'evaluating…' and a thread evaluates them; the verdict shown is evaluate_all's."""
    import copy

    from laya_tui.report.baseline import load_baseline
    from laya_tui.report.gates import GateSettings, evaluate_all
    from laya_tui.tui import model as model_mod

    monkeypatch.setattr(model_mod, "GATES_IN_THREAD_ABOVE", 0)
    settings = GateSettings(baseline=load_baseline(str(TILELANG_REPORT)))
    app = recorded_app(gate_settings=settings)
    jobs: list[int] = []
    evaluate = app._evaluate_gates

    def spy(generation, job):
        jobs.append(generation)
        return evaluate(generation, job)

    monkeypatch.setattr(app, "_evaluate_gates", spy)
    async with app.run_test(size=SIZE) as pilot:
        await _gates_settled(app, pilot)
        assert jobs  # evaluated by the app's thread job, not by the summary
        expected = evaluate_all(copy.deepcopy(app.model.results()), settings,
                                app.model.errors)[0]
        assert app.model.gates() == expected
        failed = [g for g in expected if not g["passed"]]
        status = str(app.main_screen.query_one("#summary-gates").render())
        assert "evaluating" not in status
        assert ("FAIL" if failed else "PASS") in status
        assert all(f"{g['name']} ({len(g['failures'])})" in status for g in failed)


async def test_gates_that_cannot_be_evaluated_show_as_a_failing_gate(monkeypatch):
    """An evaluation that raises in its thread ends as a failing 'gates' gate on the summary,
    not as 'evaluating…' forever."""

    from laya_tui.report.baseline import load_baseline
    from laya_tui.report.gates import GateSettings
    from laya_tui.tui import model as model_mod

    monkeypatch.setattr(model_mod, "GATES_IN_THREAD_ABOVE", 0)
    settings = GateSettings(baseline=load_baseline(str(TILELANG_REPORT)))
    app = recorded_app(gate_settings=settings)
    real_job = app.model.gate_job

    def broken_job():
        generation, _ = real_job()

        def boom():
            raise RuntimeError("baseline went away")
        return generation, boom

    monkeypatch.setattr(app.model, "gate_job", broken_job)
    async with app.run_test(size=SIZE) as pilot:
        await _gates_settled(app, pilot)
        status = str(app.main_screen.query_one("#summary-gates").render())
        assert "evaluating" not in status and "FAIL" in status and "gates (1)" in status


async def test_a_flood_is_drained_slice_after_slice_not_once_per_flush_interval(tmp_path):
    """With events still waiting after a slice, the next slice runs at once (a short timer),
    not a whole flush interval later: here the interval is a second and the budget allows
    one 128-event step per slice (157 slices: minutes at one a second), so only back-to-back
    slices drain the flood within the ten seconds waited."""
    import asyncio

    n = 20_000
    app = recorded_app(report=_flood_report(tmp_path, n), flush_interval=1.0, budget=0.0)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(1000):
            if app.model.probes.get("flood/many") and app.model.probes["flood/many"].finished \
                    and not app.pump.pending:
                break
            await asyncio.sleep(0.01)
        await pilot.pause()
        assert not app.pump.pending
        assert app.model.kind_counts["fallback"] == n
        # the running clock firing while the app closes (its widgets gone: a loaded
        # machine's test run hit it) is harmless
        from textual.css.query import NoMatches

        screen_type = type(app.main_screen)
        tree = screen_type.tree

        def gone(self: object) -> None:
            raise NoMatches("No nodes match '#tree'")

        screen_type.tree = property(gone)  # type: ignore[assignment,method-assign]
        try:
            app._tick()
        finally:
            screen_type.tree = tree  # type: ignore[method-assign]


async def test_heavy_callbacks_mark_their_end_and_the_screens_update_waits_after_one(
        tmp_path, monkeypatch):
    """The repaint, the pump's slices and the widgets' update each tell the loop pass when
    they end; a screen update right after another's work waits a moment (twice at most,
    then it paints anyway); the flood still drains."""
    import asyncio

    from laya_tui.tui import loop_pass

    n = 5_000
    app = recorded_app(report=_flood_report(tmp_path, n), budget=0.0)
    owners: list[str] = []
    worked = app.loop_pass.worked

    def counted(by: str) -> None:
        owners.append(by)
        worked(by)

    app.loop_pass.worked = counted  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(1000):
            if app.model.kind_counts.get("fallback") == n and not app.pump.pending:
                break
            await asyncio.sleep(0.01)
        await pilot.pause()
        assert app.model.kind_counts["fallback"] == n
        assert {"paint", "pump", "apply"} <= set(owners)
        table = app.main_screen.table
        table.set_sort("subject")  # a build of every row, in steps
        for _ in range(400):
            if not table.order.building:
                break
            await asyncio.sleep(0.01)
        assert not table.order.building and "build" in owners
        screen = app.main_screen
        for _ in range(100):  # no update of the screen's own waiting now
            if screen._update_waits == 0:
                break
            await asyncio.sleep(0.005)
        monkeypatch.setattr(loop_pass, "ADJACENT_S", 60.0)  # every work counts as just done
        paints = owners.count("paint")
        app.loop_pass.worked("apply")
        screen._on_timer_update()
        assert owners.count("paint") == paints and screen._update_waits == 1  # it waited
        for _ in range(100):
            if owners.count("paint") > paints:
                break
            await asyncio.sleep(0.005)
        assert owners.count("paint") == paints + 1 and screen._update_waits == 0
        # a waiting update and the repaint timer's own: one paint, not two back to back
        paints = owners.count("paint")
        app.loop_pass.worked("apply")
        screen._on_timer_update()
        waiting = screen._update_later
        assert waiting is not None and owners.count("paint") == paints
        monkeypatch.setattr(loop_pass, "ADJACENT_S", 0.0)
        screen._on_timer_update()  # the timer's: it paints, the waiting one is dropped
        assert owners.count("paint") == paints + 1 and screen._update_later is None
        assert waiting.cancelled()


async def test_a_report_in_hand_warms_the_detail_imports_before_the_app_starts(tmp_path,
                                                                               monkeypatch):
    """Its rows stream in with the first frames, which a warm-up thread beside them made
    slower (the interpreter lock shared), and start-up left that thread no idle moment: with
    a report in hand the imports run before the loop starts, in no thread. Without one (a
    live run, a file still to read) the thread starts after the first frame, as before."""
    import threading

    from laya_tui.cli.show import build_saved_app
    from laya_tui.tui import app as app_module

    calls: list[tuple[str, bool]] = []
    warm = app_module.warm_imports

    def spy() -> None:
        calls.append((threading.current_thread().name, bool(running)))
        warm()

    running: list[bool] = []
    monkeypatch.setattr(app_module, "warm_imports", spy)
    report = json.loads(_flood_report(tmp_path, 10).read_text())
    saved = build_saved_app(report, label="saved", workspace=str(tmp_path))
    assert calls == [("MainThread", False)]  # in the constructor: before the loop runs
    async with saved.run_test(size=SIZE) as pilot:
        running.append(True)
        await pilot.pause()
    assert calls == [("MainThread", False)]  # and once: no thread after the first frame
    async with recorded_app(report=_flood_report(tmp_path, 10)).run_test(size=SIZE) as pilot:
        await pilot.pause()
        for _ in range(100):
            if len(calls) > 1:
                break
            await asyncio.sleep(0.01)
    assert calls[1] == ("laya-warm-imports", True)  # a thread, after the first frame
