"""The worker protocol's typed dicts (core/protocol.py) hold what a real worker writes:
every event of a discovery and of three runs (ok, a probe that raises, a probe file gone)
has the keys of its TypedDict, required ones included, and the objects it carries (cells,
file errors, the probe's exception, signals) have the keys of theirs."""

from __future__ import annotations

import asyncio
import json
import typing
from pathlib import Path
from typing import Any

from laya_tui.core.protocol import EVENT_TYPES, Op, Reply
from laya_tui.core.report_types import (
    SCHEMA_DEFS,
    CellSpec,
    ErrorDict,
    FileErrorDict,
    SignalDict,
)
from laya_tui.core.settings import RunOptions
from laya_tui.core.worker_handle import WorkerHandle

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "laya_tui" / "report" /
                     "schema.json").read_text())

PROBES = '''
from laya_tui import param, probe


@probe("fam", params=[param("a", x=1)])
def cell(ctx, x):
    ctx.step("work")
    ctx.signal("log", reason="hello", site={"file": __file__, "line": 6})


@probe("fam")
def raises(ctx):
    raise ValueError("boom")
'''


def _fits(obj: object, typed: Any, what: str) -> None:  # typed: a TypedDict class
    assert isinstance(obj, dict), what
    names = set(typing.get_type_hints(typed))
    assert set(typed.__required_keys__) <= set(obj) <= names, (what, sorted(obj))


async def _session(tmp_path: Path) -> list[dict]:
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "p.py").write_text(PROBES)
    (probes / "broken.py").write_text("import no_such_module_here\n")
    config = RunOptions(workspace=str(tmp_path), probes=(str(probes),), use_cache=False,
                        cache_dir=str(tmp_path / "cache"))
    handle = WorkerHandle("fam", config, str(tmp_path))
    events: list[dict] = []
    try:
        await handle.start()
        await handle.send({"op": Op.DISCOVER, "paths": [str(probes)]})
        found = await handle.next_event(timeout=60.0)
        events.append(dict(found))
        assert found["type"] == Reply.DISCOVERED
        for cell in found["probes"]:
            await handle.send({"op": Op.RUN, "id": cell["id"], "file": cell["file"],
                               "func": cell["func"], "param": cell["param"],
                               "log": str(tmp_path / "run.log")})
            while True:
                event = await handle.next_event(timeout=60.0)
                events.append(dict(event))
                if event["type"] == Reply.FINISHED:
                    break
        await handle.send({"op": Op.INVALIDATE, "files": [str(probes / "p.py")]})
        events.append(dict(await handle.next_event(timeout=30.0)))
    finally:
        handle.kill()
        await handle.close()
    return events


def test_every_event_of_a_real_worker_fits_its_typed_dict(tmp_path: Path) -> None:
    events = asyncio.run(_session(tmp_path))
    seen = {e["type"] for e in events}
    assert {Reply.DISCOVERED, Reply.STARTED, Reply.SIGNALS, Reply.STEP, Reply.FINISHED,
            Reply.INVALIDATED} <= seen
    for event in events:
        _fits(event, EVENT_TYPES[event["type"]], event["type"])
    disc = events[0]
    assert [c["id"] for c in disc["probes"]] == ["fam/cell[a]", "fam/raises"]
    for cell in disc["probes"]:
        _fits(cell, CellSpec, "cell")
    assert len(disc["errors"]) == 1 and "no_such_module_here" in disc["errors"][0]["error"]
    for err in disc["errors"]:
        _fits(err, FileErrorDict, "discovery error")
    for event in events:
        for sig in event.get("signals", []):
            _fits(sig, SignalDict, "signal")
            if sig.get("site") is not None:
                _fits(sig["site"], SCHEMA_DEFS["site"], "site")
    finished = {e["id"]: e for e in events if e["type"] == Reply.FINISHED}
    assert finished["fam/cell[a]"]["status"] == "ok"
    assert finished["fam/cell[a]"]["error"] is None
    error = finished["fam/raises"]["error"]
    assert finished["fam/raises"]["status"] == "failed" and error["type"] == "ValueError"
    _fits(error, ErrorDict, "error")


def test_every_event_type_is_typed_and_tagged_by_its_literal() -> None:
    replies = {v for k, v in vars(Reply).items() if k.isupper()}
    assert set(EVENT_TYPES) == replies
    for tag, typed in EVENT_TYPES.items():
        assert typing.get_args(typing.get_type_hints(typed)["type"]) == (tag,), tag


def test_a_cells_fields_that_reach_the_result_are_the_reports() -> None:
    """make_result copies these from the cell into the report's probe entry."""
    probe = SCHEMA["$defs"]["probe"]["properties"]
    assert {"id", "family", "file", "params", "env", "deps"} <= set(probe)
    assert {"id", "family", "file", "params", "env", "deps"} <= set(CellSpec.__annotations__)
