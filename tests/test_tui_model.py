"""The dashboard's pure parts: model keys across re-runs, the pump's time budget, formats,
the editor command, and the virtual table's sorting and filtering."""

from __future__ import annotations

import time
from typing import Any

import pytest

from laya_tui.core import cellid
from laya_tui.core.events import ProbeFinished, ProbeQueued, ProbeStarted, SignalEmitted
from laya_tui.core.replay import load_report
from laya_tui.core.report_types import FileErrorDict, SignalDict
from laya_tui.report.views.text import human_bytes
from laya_tui.tui.editor import editor_command
from laya_tui.tui.model import ALL, Changes, RunModel, SignalRow
from laya_tui.tui.pump import EventPump
from laya_tui.tui.widgets.matrix import matrix_view
from laya_tui.tui.widgets.signal_table import SignalTable, TableFilter, row_text
from laya_tui.tui.widgets.table_bands import row_band
from tests._signals import partial_result, partial_signal
from tests._tui import DEMO_REPORT, TILELANG_REPORT


def run(model: RunModel, pid: str, signals: list[SignalDict], status: str = "ok") -> Changes:
    changes = Changes()
    model.apply(ProbeQueued(pid, "fam"), changes)
    model.apply(ProbeStarted(pid, "fam", 1.0), changes)
    for sig in signals:
        model.apply(SignalEmitted(pid, sig), changes)
    model.apply(ProbeFinished(partial_result({
        "id": pid, "family": "fam", "status": status, "reason": None, "seconds": 0.5,
        "signals": signals, "log_tail": ""})), changes)
    return changes


def fb(subject: str, count: int = 1, **kw: Any) -> SignalDict:  # its probe: the event's
    return partial_signal({"kind": "fallback", "subject": subject, "count": count,
                           "reason": "r", **kw})


def test_rerun_updates_changed_rows_and_drops_gone_ones():
    model = RunModel()
    first = run(model, "fam/p", [fb("a"), fb("b"), fb("a")])  # duplicate keys get #1, #2
    assert len(first.added) == 3 and len({r.key for r in first.added}) == 3
    keys = [r.key for r in model.probes["fam/p"].rows]
    second = run(model, "fam/p", [fb("a"), fb("a", count=5)])
    assert second.added == []
    assert [r.key for r in second.updated] == [keys[2]]  # the second "a" changed its count
    assert [r.sig["subject"] for r in second.removed] == ["b"]
    assert [r.key for r in model.probes["fam/p"].rows] == [keys[0], keys[2]]
    assert model.kind_counts["fallback"] == 2
    assert [r.run for r in model.probes["fam/p"].runs] == [1, 2]


def test_occurrences_are_counted_per_run_and_per_probe():
    model = RunModel()
    run(model, "fam/p", [fb("a"), fb("a"), fb("a")])
    run(model, "fam/q", [fb("a")])  # the same ident in another probe: a row of its own
    p = model.probes["fam/p"]
    keys = [r.key for r in p.rows]
    assert len(set(keys)) == 3 and len(model.probes["fam/q"].rows) == 1
    fewer = run(model, "fam/p", [fb("a"), fb("a", count=2)])
    assert [r.key for r in fewer.removed] == [keys[2]] and fewer.added == []
    assert [r.key for r in fewer.updated] == [keys[1]]
    more = run(model, "fam/p", [fb("a"), fb("a", count=2), fb("a"), fb("a")])
    assert [r.key for r in more.added][:1] == [keys[2]]  # the third occurrence's key again
    assert len(more.added) == 2 and more.removed == [] and len(p.rows) == 4
    assert len(model.rows) == 5 and model.kind_counts["fallback"] == 5


def test_finished_without_streamed_signals_ingests_the_result():
    model = RunModel()
    changes = Changes()
    model.apply(ProbeFinished(partial_result({
        "id": "f/x", "family": "f", "status": "crashed", "reason": "worker killed by SIGSEGV",
        "seconds": 0.1, "signals": [{"kind": "log", "reason": "before"}],
        "log_tail": "boom"})), changes)
    st = model.probes["f/x"]
    assert st.status == "crashed" and st.log_tail == "boom" and len(st.rows) == 1
    assert changes.structure and changes.finished == ["f/x"]


def test_abandon_restores_the_last_status():
    model = RunModel()
    run(model, "fam/p", [fb("a")], status="failed")
    changes = Changes()
    model.apply(ProbeQueued("fam/p", "fam"), changes)
    model.apply(ProbeQueued("fam/q", "fam"), changes)
    model.abandon()
    assert model.probes["fam/p"].status == "failed"
    assert model.probes["fam/q"].status == "pending"


def test_pump_drains_in_time_boxed_slices():
    """The drain checks its budget every 128 events: a spent budget ends the slice there,
    an ample one folds everything (the seconds a slice takes: benchmarks/bench_pump.py)."""
    model = RunModel()
    pump = EventPump(model, budget=0.0)
    pump.push(ProbeStarted("f/flood", "f", 1.0))
    for i in range(50_000):
        pump.push(SignalEmitted("f/flood", partial_signal({"kind": "timing", "subject": f"s{i}",
                                                           "seconds": 0.001})))
    first = pump.drain()
    assert len(first.added) == 127 and pump.pending == 50_001 - 128  # one 128-event stride
    second = pump.drain()
    assert len(second.added) == 128 and len(model.rows) == 255
    pump.budget = 3600.0
    rest = pump.drain()
    assert pump.pending == 0 and len(rest.added) == 50_000 - 255
    assert len(model.rows) == 50_000


def test_a_slice_asked_for_right_after_another_waits_for_a_timer():
    """Textual's timer runs a late tick at once, in the same loop pass: the pump folds no
    second slice then, it asks for a redrain timer (which yields to the loop first)."""
    timers: list[tuple[float, object]] = []

    class Interval:
        def pause(self) -> None: ...
        def resume(self) -> None: ...

    pump = EventPump(RunModel(), budget=0.0)
    pump.start(lambda *a, **k: Interval(), lambda delay, cb: timers.append((delay, cb)))
    pump.push(ProbeStarted("f/flood", "f", 1.0))
    for i in range(1_000):
        pump.push(SignalEmitted("f/flood", partial_signal({"kind": "timing", "subject": f"s{i}"})))
    pump.tick()
    left = pump.pending
    assert left == 1_001 - 128 and len(timers) == 1  # one slice, a redrain asked for
    pump.tick()  # at once, as a late interval would: nothing folded, no second timer
    assert pump.pending == left and len(timers) == 1
    delay, redrain = timers.pop()
    time.sleep(delay)
    redrain()  # type: ignore[operator]
    assert pump.pending == left - 128


def test_a_slice_waits_when_other_heavy_work_just_ended():
    """A repaint (or the widgets' update) and a slice one after another held the loop for
    both: right after another's work ends (LoopPass.worked), a tick folds nothing and asks
    for a redrain; its own slice does not count, and a moment later the slice runs."""
    import time as _time

    from laya_tui.tui.loop_pass import ADJACENT_S, LoopPass

    passes = LoopPass()
    timers: list[tuple[float, object]] = []

    class Interval:
        def pause(self) -> None: ...
        def resume(self) -> None: ...

    pump = EventPump(RunModel(), budget=0.0, busy=lambda: passes.just_worked("pump"),
                     worked=lambda: passes.worked("pump"))
    pump.start(lambda *a, **k: Interval(), lambda delay, cb: timers.append((delay, cb)))
    pump.push(ProbeStarted("f/flood", "f", 1.0))
    for i in range(1_000):
        pump.push(SignalEmitted("f/flood", partial_signal({"kind": "timing", "subject": f"s{i}"})))
    assert not passes.just_worked("pump")
    passes.worked("paint")  # the screen repainted just now
    assert passes.just_worked("pump") and not passes.just_worked("paint")
    pump.tick()
    assert pump.pending == 1_001 and len(timers) == 1  # nothing folded: a redrain instead
    _time.sleep(ADJACENT_S * 2)
    timers.pop()[1]()  # type: ignore[operator]  # the redrain, a moment later
    assert pump.pending == 1_001 - 128
    assert passes.just_worked("paint") and not passes.just_worked("pump")  # its own slice


def test_human_bytes_and_cells():
    assert human_bytes(None) == ""
    assert human_bytes(512) == "512 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    cell = cellid.parse("tilelang/gemm_kernel[c,bf16,gpu]")
    assert (cell.family, cell.name, cell.parts) == ("tilelang", "gemm_kernel",
                                                    ("c", "bf16", "gpu"))
    assert cellid.cell_id("tilelang", "gemm_kernel", "c,bf16,gpu") == \
        "tilelang/gemm_kernel[c,bf16,gpu]"
    assert cellid.parse("env/python") == cellid.CellId("env", "python", None)
    assert cellid.parse("env/python").parts == ()
    under = cellid.parse("tilelang/gemm_kernel[c,bf16,gpu]@cpu-old")  # --env
    assert (under.name, under.parts, under.env) == ("gemm_kernel", ("c", "bf16", "gpu"),
                                                    "cpu-old")
    assert cellid.with_env("env/python", "new") == "env/python@new"
    assert cellid.split_env("env/python@new") == ("env/python", "new")
    assert cellid.split_env("env/python") == ("env/python", None)


@pytest.mark.parametrize(("editor", "expected"), [
    ("vim", ["vim", "+12", "/w/m.py"]),
    ("nvim -p", ["nvim", "-p", "+12", "/w/m.py"]),
    ("code --wait", ["code", "--wait", "--goto", "/w/m.py:12"]),
    ("subl", ["subl", "/w/m.py:12"]),
])
def test_editor_command(editor, expected):
    assert editor_command(editor, "/w/m.py", 12) == expected
    assert editor_command(editor, "/w/m.py", None)[-1] == "/w/m.py"


def _recorded_model(report=DEMO_REPORT) -> RunModel:
    model = RunModel()
    changes = Changes()
    for p in load_report(report)["probes"]:
        model.apply(ProbeFinished(p), changes)
    return model


def _table(model: RunModel, scope=ALL) -> SignalTable:
    """A table outside an app: the scope's rows, widget refreshes skipped."""
    table = SignalTable()
    table.segments_of = lambda: model.segments(scope)
    table.rank_of = lambda pid: model.probes[pid].rank

    def no_refresh(keep: SignalRow | None, *, announce: bool) -> None:  # no app: no widget
        return None

    table._after_change = no_refresh  # type: ignore[method-assign]  # the test's stand-in
    return table


def _stepped_table(monkeypatch, n: int) -> tuple[RunModel, SignalTable]:
    """A probe of ``n`` scattered rows and a table over it that builds one chunk per step."""
    from laya_tui.tui.widgets import signal_table

    model = RunModel()
    run(model, "fam/p", [fb(f"s{(i * 7919) % n}", count=(i * 31) % 97) for i in range(n)])
    table = _table(model)
    monkeypatch.setattr(signal_table, "BUILD_BUDGET_S", 0.0)  # one chunk per step
    table.budget, table.step_unmounted = 0.0, True
    return model, table


def test_table_sorts_on_raw_values_and_filters():
    model = _recorded_model()
    table = _table(model)
    table.filter = TableFilter(kind="fallback")
    table.sort_column, table.sort_reverse = "bytes", True
    table.rebuild()
    assert table.column_values("bytes") == ["1.5 MiB", "256.0 KiB", "128.0 KiB", "64.0 KiB"]
    table.filter = TableFilter(text="SOFTMAX")
    table.rebuild()
    assert table.column_values("subject") == ["aten::_softmax", "hidden_states"]
    # streaming a row in keeps the order (bisect on the raw value)
    table.filter = TableFilter(kind="fallback")
    table.sort_column, table.sort_reverse = "count", False
    table.rebuild()
    assert table.column_values("count") == ["1", "2", "2", "4"]
    extra = run(model, "fam/new", [fb("aten::x", count=3)]).added
    table.apply(extra, [], [])
    assert table.column_values("count") == ["1", "2", "2", "3", "4"]
    assert row_text(extra[0])[0] == "fallback"
    # unfiltered, unsorted: findings first (severity band, then probe, then arrival), the
    # model's own list for a probe whose rows share one band (nothing copied)
    table.filter, table.sort_column = TableFilter(), None
    table.rebuild()
    assert table.row_count == len(model.rows) and not table.order.listed
    want = sorted(model.rows.values(),
                  key=lambda r: (row_band(r), model.probes[r.probe].rank, r.seq))
    assert table.keys() == [r.key for r in want]
    one_band = [st.rows for st in model.probes.values()
                if st.rows and len({row_band(r) for r in st.rows}) == 1]
    assert one_band and all(any(seg is rows for seg in table.order.segments)
                            for rows in one_band)


def test_a_sort_of_many_rows_is_built_in_steps_and_lands_where_a_full_sort_does(monkeypatch):
    """Past one chunk the filtered/sorted list is built a step at a time (a zero budget:
    one chunk per step) and merged; the order is the one sorted() gives, streamed rows go
    to their place, and a row of a re-run moves by its new value."""
    n = 10_000
    model, table = _stepped_table(monkeypatch, n)
    table.sort_column = "count"
    table.rebuild()
    assert table.building and table.row_count == 0 and table.busy_text().startswith("sorting")
    steps = 0
    while table.building:
        table._step_build(None)
        steps += 1
    assert steps > 3
    want = sorted(model.rows.values(), key=lambda r: (r.sig["count"], r.seq))
    assert table.keys() == [r.key for r in want]
    extra = run(model, "fam/q", [fb("late", count=50)]).added
    table.apply(extra, [], [])
    values = [int(v) for v in table.column_values("count")]
    assert values == sorted(values) and len(values) == n + 1
    assert table.index_of(extra[0]) is not None
    # another sort while one is shown: the shown list stays usable until the new one is done
    table.sort_column = "subject"
    table.rebuild()
    for _ in range(3):
        table._step_build(None)
        assert table.row_count == n + 1
        assert all(r is None or table.index_of(r) in (None, i) for i, r in
                   enumerate(table.row_at(j) for j in range(50)))
    while table.building:
        table._step_build(None)
    subjects = table.column_values("subject")
    assert subjects == sorted(subjects, key=str.lower)


def test_a_kept_sort_serves_a_filter_and_comes_back_at_once_when_it_is_cleared(monkeypatch):
    """A finished sort of every row is kept: a filter on the same sort scans it in its
    order (no sort, no new keys) and is shown as it grows; clearing the filter or reversing
    the sort shows the kept one again with no build. A row streamed in or changed drops it
    (the list a filter still scans is freed only after that filter), and the next clear
    sorts again, with those rows in their places."""
    n = 20_000
    model, table = _stepped_table(monkeypatch, n)
    order = table.order

    def finish() -> None:
        while table.building:
            table._step_build(None)

    def want(reverse: bool = False, accepted: bool = False) -> list[str]:
        rows = sorted(model.rows.values(), key=lambda r: (r.sig["count"], r.seq),
                      reverse=reverse)
        return [r.key for r in rows if not accepted or table.accepts(r)]

    def placed() -> None:  # every row shown is found where it is shown
        shown = [table.row_at(i) for i in range(table.row_count)]
        assert all(table.index_of(r) == i for i, r in enumerate(shown) if r is not None)

    table.sort_column = "count"
    table.rebuild()
    finish()
    full, shelf = table.keys(), order.shelf
    assert full == want() and shelf is not None and order.rows is shelf.rows
    table.filter = TableFilter(text="s1")
    table.rebuild()
    build = order._build
    assert build is not None and not build.sort and build.reads is shelf.rows
    table._step_build(None)
    assert 0 < table.row_count < n  # shown as it grows, already in the sort's order
    finish()
    assert table.keys() == want(accepted=True) and not build.entries
    placed()
    out = next(r for r in model.rows.values() if not table.accepts(r))
    assert table.index_of(out) is None
    table.filter = TableFilter()  # cleared: the kept sort, at once
    table.rebuild()
    assert not table.building and order.rows is shelf.rows and table.keys() == full
    table.sort_reverse = True  # reversed: at once too
    table.rebuild()
    assert not table.building and table.keys() == full[::-1]
    placed()
    assert not any(t is shelf.rows or t is shelf.keys for t in order.trash)
    # a row streamed in while a filter scans the kept sort: the sort is dropped, the list
    # it scans stays whole until the filter is done (the trash swept in between)
    table.filter = TableFilter(text="s1")
    table.rebuild()
    table._step_build(None)
    late = run(model, "fam/q", [fb("s1-late", count=50), fb("t-late", count=3)]).added
    table.apply(late, [], [], structure=True)
    assert order.shelf is None and table.building
    order.sweep(None)
    finish()
    assert table.keys() == want(reverse=True, accepted=True)
    assert table.index_of(late[0]) is not None and table.index_of(late[1]) is None
    placed()
    table.filter = TableFilter()  # nothing kept fits: sorted again, both late rows in
    table.rebuild()
    assert table.building
    finish()
    assert table.keys() == want(reverse=True) and order.shelf is not None
    changed = run(model, "fam/q", [fb("s1-late", count=0), fb("t-late", count=3)]).updated
    assert len(changed) == 1
    table.apply([], changed, [])  # a changed row drops the kept sort too, and moves
    assert order.shelf is None and table.keys() == want(reverse=True)
    order.sweep(None)
    assert table.keys() == want(reverse=True)
    placed()


def test_matrix_cells_from_lowering_signals_and_statuses():
    view = matrix_view(_recorded_model(TILELANG_REPORT))
    assert sorted(view.kernels) == ["add_ln_kernel", "attn_kernel", "gemm_geglu_kernel",
                                    "gemm_kernel", "rope_kernel"]
    assert [c.key for c in view.columns[:2]] == ["c·fp32·cpu", "c·fp32·gpu"]  # c, cpu first
    assert len(view.columns) == 12
    assert view.cells[("add_ln_kernel", "c·fp16·gpu")].outcome == "lower-failed"
    assert view.cells[("add_ln_kernel", "c·fp16·gpu")].opens_signal
    assert view.cells[("gemm_kernel", "c·fp16·cpu")].outcome == "skipped"  # status only
    assert view.cells[("gemm_kernel", "c·fp16·cpu")].signal is None
    assert matrix_view(_recorded_model()).kernels == []  # no lowering family in the demo


def test_the_ui_keeps_frozen_snapshots_not_the_runners_dicts():
    import dataclasses

    from laya_tui.core.results import ProbeResult, Signal

    model = RunModel()
    signals = [fb("a", passed=False, probe="fam/p"), fb("b", probe="fam/p")]
    run(model, "fam/p", signals, status="failed")
    st = model.probes["fam/p"]
    assert isinstance(st.result, ProbeResult) and st.result.status == "failed"
    assert all(isinstance(s, Signal) for s in st.result.signals)
    assert [s.key() for s in st.result.signals] == [("fam/p", "fallback", "a", "r"),
                                                    ("fam/p", "fallback", "b", "r")]
    rows = model.rows_for(("probe", "fam/p"))
    assert [r.failing for r in rows] == [True, False]
    signals[0]["count"] = 99  # the runner's dict changes later: what the UI shows does not
    assert rows[0].sig["count"] == 1 and st.result.signals[0].count == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.result.status = "ok"  # type: ignore[misc]
    # the app passes a watch record's result on even when it came as an event: applied once
    entry = st.report_entry
    assert entry is not None
    changes = Changes()
    model.apply(ProbeFinished(entry), changes)
    assert len(st.runs) == 1 and not changes and model.results() == [entry]


def _gate_signals() -> list[SignalDict]:
    rest: list[dict[str, Any]] = [
        {"kind": "tolerance", "subject": "out", "value": 0.5, "limit": 0.1, "passed": False},
        {"kind": "tolerance", "subject": "ok", "value": 0.01, "limit": 0.1, "passed": True},
        {"kind": "lowering", "subject": "k", "reason": "no layout", "passed": False},
        {"kind": "recompile", "subject": "f", "reason": "cold compile (first compile of f)",
         "count": 1},
        {"kind": "recompile", "subject": "g", "reason": "guard failed", "count": 2},
        {"kind": "compile", "subject": "h", "count": 1},
        {"kind": "host_bounce", "subject": "cpu", "count": 4},
        {"kind": "log", "reason": "hello"},
    ]
    return [fb("a", count=3), fb("b"), fb("c", count=2), *map(partial_signal, rest)]  # no probe


@pytest.mark.parametrize("fail_on,max_counts", [
    ([], {}),
    (["fallback", "lowering", "failed"], {}),
    ([], {"fallback": 3, "recompile": 0, "compile": 0, "host_bounce": 10}),
    (["compile", "tolerance", "skipped"], {"lowering": 0, "log": 0}),
])
def test_live_gates_equal_the_report_gates(fail_on, max_counts):
    """The summary's gates (over each result's gate view) equal evaluate_all over the full
    results, which is what the final report writes."""
    import copy

    from laya_tui.report.gates import GateSettings, evaluate_all

    settings = GateSettings(fail_on=fail_on, max_counts=max_counts)
    model = RunModel(settings)
    run(model, "fam/p", _gate_signals())
    run(model, "fam/q", [fb("x", count=7), fb("y")], status="failed")
    run(model, "fam/r", _gate_signals()[3:], status="skipped")
    full = copy.deepcopy(model.results())
    errors: list[FileErrorDict] = [{"file": "probes/bad.py", "error": "SyntaxError"}]
    model.errors = errors
    live = model.gates()
    assert live == evaluate_all(full, settings, errors)[0]
    kinds = settings.kinds_read()
    assert kinds is not None and "log" not in (GateSettings().kinds_read() or {"log"})
    assert model.gate_kinds == kinds
    if "log" not in kinds:  # fam/p's log signal was left out: the gates read a subset
        assert model.probes["fam/p"]._gate_view is not None
    # a later result is reflected, and the views did not change what the table shows
    run(model, "fam/q", [fb("x", count=7)], status="ok")
    full = copy.deepcopy(model.results())
    assert model.gates() == evaluate_all(full, settings, errors)[0]
    assert model.kind_counts["fallback"] == 4


def test_live_gates_with_a_baseline_read_every_signal():
    import copy

    from laya_tui.report.baseline import load_baseline
    from laya_tui.report.gates import GateSettings, evaluate_all

    settings = GateSettings(baseline=load_baseline(str(DEMO_REPORT)))
    model = RunModel(settings)
    pid = load_report(DEMO_REPORT)["probes"][0]["id"]
    run(model, pid, _gate_signals())
    assert model.probes[pid]._gate_view is None
    assert model.gates() == evaluate_all(copy.deepcopy(model.results()), settings)[0]


def test_a_sort_keeps_the_collectors_work_small_and_frees_old_lists_in_slices():
    """A sort's keys hold no row (the collector untracks them: a full collection does not
    walk 20,000 tuples); rows put in or taken out later (keyed ``(value, seq)``) land
    among the sort's ``(value, seq, index)`` keys where a full sort puts them; the list
    shown before is freed a slice per sweep, the one shown never."""
    import gc

    from laya_tui.tui.widgets import table_rows
    from laya_tui.tui.widgets.table_rows import RowOrder

    model = RunModel()
    n = 20_000
    run(model, "fam/p", [fb(f"s{(i * 7919) % 613}", count=(i * 31) % 97) for i in range(n)])
    rows = list(model.rows.values())
    order = RowOrder()

    def key(row):
        return (row.sig["count"], row.seq)

    def sort() -> None:
        order.begin(iter(rows), None, key, sort=True, reverse=False, total=len(rows))
        while not order.step(0.0):
            pass

    order.begin(iter(rows), None, key, sort=True, reverse=False, total=len(rows))
    build = order._build
    assert build is not None
    while not build.exhausted:  # every row scanned and keyed, the runs not merged yet
        order.step(0.0)
    gc.collect()
    assert len(build.entries) == n and not any(gc.is_tracked(e) for e in build.entries)
    while not order.step(0.0):
        pass
    first = order.keys
    assert order.keys == sorted(order.keys) and [order.at(i) for i in range(n)] == sorted(
        rows, key=key)
    late = run(model, "fam/q", [fb("late", count=50), fb("early", count=0)]).added
    for row in late:
        assert order.insert(row)
    moved = rows[123]
    assert order.remove(moved) and order.index_of(moved) is None
    shown = [order.at(i) for i in range(len(order))]
    assert shown == sorted([r for r in rows if r is not moved] + late, key=key)
    assert all(r is not None and order.index_of(r) == i for i, r in enumerate(shown))
    sort()  # a new sort: the list shown before goes to the trash, the new one is shown
    assert order.trash and any(t is first for t in order.trash)
    assert all(order.keys is not t and order.rows is not t for t in order.trash)
    before = len(first)
    order.sweep(0.0)  # one slice
    assert before - len(first) == table_rows.SWEEP_CHUNK
    order.sweep(None)
    assert not order.trash and not first and len(order) == n
