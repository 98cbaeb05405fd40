"""The cache stores a flood of signals from the text the worker wrote (the spool), and the
entry holds exactly the signals the run reported; a line in another layout falls back to
encoding them."""

from __future__ import annotations

import asyncio
import json
import textwrap

from laya_tui.core import cache as cache_mod
from laya_tui.core.cache import ResultCache, SignalSpool
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions
from tests._signals import partial_result

N = 5000  # more than one store slice (cache._SLICE) of signals


def _sig(i: int) -> dict:
    return {"kind": "fallback", "probe": "f/many", "subject": f"op{i % 7}", "count": i,
            "site": {"file": "m.py", "line": i}, "detail": {"x": [1, 2.5, None, "q\"}, {"]}}


def _line(sigs: list[dict], probe: str = "f/many") -> bytes:
    # the worker's own layout (laya_tui.worker.main: _BATCH_HEAD, the signal encoder)
    from laya_tui.worker.main import _BATCH_HEAD, _encode

    text = ", ".join(_encode(s) for s in sigs)
    return (_BATCH_HEAD + _encode(probe) + ', "signals": [' + text + "]}\n").encode()


def _store(tmp_path, spool, sigs):
    cache = ResultCache(tmp_path / "c")
    result = partial_result({"id": "f/many", "status": "ok", "signals": sigs})
    asyncio.run(cache.store_async("f/many", {}, {}, {}, [], result, spool))
    assert cache.lookup("f/many", {}, {}, {}) == result
    assert not [p for p in (tmp_path / "c").glob("*.tmp")  # the entry's temporary file
                if not p.name.startswith(".spool-")]


def test_the_spool_holds_the_worker_text_and_the_entry_reads_back(tmp_path):
    (tmp_path / "c").mkdir()
    sigs = [_sig(i) for i in range(N)]
    spool = SignalSpool(tmp_path / "c", "f/many")
    for k in range(0, N, 700):
        line = _line(sigs[k:k + 700])
        spool.add(line, json.loads(line))
    spool.add(_line([]), json.loads(_line([])))  # an empty batch adds nothing
    assert spool.holds(sigs) and not spool.holds(sigs[:-1])
    _store(tmp_path, spool, sigs)
    spool.close()
    assert not list((tmp_path / "c").glob(".spool-*"))


def test_a_line_in_another_layout_or_a_lone_signal_makes_it_decline(tmp_path):
    (tmp_path / "c").mkdir()
    sigs = [_sig(i) for i in range(N)]
    odd = json.dumps({"type": "signals", "probe": "f/many", "signals": sigs[N // 2:]},
                     indent=1).encode() + b"\n"
    for bad in (odd, _line(sigs[N // 2:], probe="f/other")):
        spool = SignalSpool(tmp_path / "c", "f/many")
        spool.add(_line(sigs[:N // 2]), json.loads(_line(sigs[:N // 2])))
        spool.add(bad, json.loads(bad))
        assert not spool.holds(sigs)
        _store(tmp_path, spool, sigs)  # encoded from the signals: the same entry
    extra = dict(json.loads(_line(sigs)), more=1)  # a fourth key: not the batch layout
    spool = SignalSpool(tmp_path / "c", "f/many")
    spool.add(_line(sigs), extra)
    assert not spool.holds(sigs)


FLOOD = '''
from laya_tui import probe

@probe(family="flood")
def many(ctx):
    for i in range(5000):
        ctx.signal("fallback", subject=f"op{i % 7}", count=i, reason='q"}, {"x',
                   site={"file": __file__, "line": i, "func": "f"}, detail={"v": [i, 0.5]})
'''


def test_a_real_run_is_stored_from_its_spool(tmp_path, monkeypatch):
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "flood.py").write_text(textwrap.dedent(FLOOD))
    config = RunOptions(workspace=str(tmp_path), probes=(str(probes),),
                        cache_dir=str(tmp_path / "cache"), use_cache=True)
    held: list[bool] = []
    real_holds = SignalSpool.holds

    def holds(self, signals):  # observed, not replaced
        held.append(real_holds(self, signals))
        return held[-1]

    monkeypatch.setattr(SignalSpool, "holds", holds)

    async def go():
        runner = Runner(config)
        try:
            disc = await runner.discover()
            first = await runner.run(disc.probes)
            again = await runner.run(disc.probes)
            return first, again
        finally:
            await runner.close()

    (first,), (again,) = asyncio.run(go())
    assert held == [True]
    assert first["status"] == "ok" and len(first["signals"]) == 5000
    assert first["signals"][4999]["reason"] == 'q"}, {"x'
    assert again["cached"] and again["signals"] == first["signals"]
    assert not list((tmp_path / "cache").glob("*.tmp")) and cache_mod._SLICE < 5000
