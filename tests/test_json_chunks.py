"""core/json_chunks.py: a report parsed in pieces (so `laya-tui show`'s loader thread lets
the dashboard's loop run) is the same document ``json.loads`` gives, and bad text fails with
``json.loads``'s own error."""

from __future__ import annotations

import json
import threading
import time

import pytest

from laya_tui.core import json_chunks


def _report(n: int) -> dict:
    """A report shaped like laya-tui's, with strings that look like element boundaries."""
    sigs = [{"kind": "fallback", "probe": "p/x", "subject": f"op_{i}", "count": i,
             "reason": 'says "},{" and }, {' if i % 7 == 0 else f"r{i}",
             "site": {"file": "m.py", "line": i, "nested": [{"a": 1}, {"b": [2, {}]}]},
             "value": 1.5e-7 if i % 3 else None, "fix": "ünïcode ✓" if i % 5 == 0 else None}
            for i in range(n)]
    return {"schema": "laya-tui/report/3", "summary": {"total": 1},
            "probes": [{"id": "p/x", "family": "p", "signals": sigs, "deps": []},
                       {"id": "p/empty", "family": "p", "signals": []}],
            "errors": [], "environment": {"python": "3.11"}}


def _count_loads(monkeypatch) -> list[int]:
    """The length of every text json_chunks hands to json.loads, as it is called."""
    calls: list[int] = []
    loads = json.loads

    def counted(s: str, *a, **k):
        calls.append(len(s))
        return loads(s, *a, **k)

    monkeypatch.setattr(json, "loads", counted)  # the json module json_chunks calls
    return calls


@pytest.mark.parametrize("indent", [None, 2])
def test_a_report_parsed_in_chunks_equals_json_loads(monkeypatch, indent):
    monkeypatch.setattr(json_chunks, "CHUNK", 300)  # many chunks in a small document
    text = json.dumps(_report(2_000), indent=indent, ensure_ascii=False)
    expected = json.loads(text)
    calls = _count_loads(monkeypatch)
    assert json_chunks.loads(text) == expected
    # pieces, not the whole text in one call
    assert len(calls) > 10 and max(calls) < len(text) // 10


@pytest.mark.parametrize("doc", [
    # many probes: an array's tail meets boundaries of the next probe's array
    {"probes": [{"id": f"p{i}", "signals": [{"kind": "k", "subject": f"s{j}"}
                                            for j in range(400)]} for i in range(6)]},
    # items whose nested lists of objects hold most of the boundaries
    {"probes": [{"id": "p", "signals": [{"k": i, "d": [{"x": j} for j in range(30)]}
                                        for i in range(300)]}]},
])
def test_parsing_in_chunks_stays_linear(monkeypatch, doc):
    """Boundaries that are not the array's own (a later array's, a nested list's) are
    retried a bounded number of times per array, not once per item: either shape took
    thousands of json.loads calls over the array's tail (4 s for a 21 MB report of ten
    probes, minutes for the nested one)."""
    monkeypatch.setattr(json_chunks, "CHUNK", 2_000)
    text = json.dumps(doc)
    calls = _count_loads(monkeypatch)
    assert json_chunks.loads(text) == doc
    arrays = len(doc["probes"])
    # at most 8 failed tries per piece taken, and one run of them per array's end; each
    # try parses at most twice the chunk
    assert len(calls) <= 9 * (len(text) // 2_000 + arrays)
    assert max(calls) <= 2 * 2_000 + 2


@pytest.mark.parametrize("text", [
    '[1, 2, {"a": [3, {"b": 4}]}, "x", null, true, NaN]',
    '{"a": {"b": {"c": {"d": {"e": [1, {"f": 2}]}}}}}',
    '  {"k": "v", "k": "last wins"}  \n',
    '[{"a": 1}, {"b": 2}, 3, {"c": "}, {"}]',
    '"just a string"', "42", "[]", "{}",
])
def test_any_json_value_parses_as_json_loads_does(monkeypatch, text):
    monkeypatch.setattr(json_chunks, "CHUNK", 2)
    # compared as text: NaN is not equal to itself
    assert json.dumps(json_chunks.loads(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", [
    '{"probes": [{"signals": [{"a": 1}, {"b": 2}', '{"a": 1,}', '[1 2]', '{"a" 1}',
    '{"a": 1} trailing', '[{"a": "unterminated}]',
])
def test_bad_json_fails_with_json_loads_own_error(monkeypatch, text):
    monkeypatch.setattr(json_chunks, "CHUNK", 2)
    with pytest.raises(json.JSONDecodeError) as ours:
        json_chunks.loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_utf8_is_decoded_in_pieces_with_the_same_result_and_errors(monkeypatch):
    monkeypatch.setattr(json_chunks, "DECODE_CHUNK", 5)  # splits the multi-byte characters
    raw = "ünïcode ✓ 日本語 ".encode() * 50
    assert json_chunks.decode_utf8(raw) == raw.decode("utf-8")
    with pytest.raises(UnicodeDecodeError):
        json_chunks.decode_utf8(raw + b"\xff" + raw)


def test_a_thread_parsing_a_large_report_lets_the_main_thread_run():
    """The reason for the module: json.loads holds the interpreter lock for the whole
    parse; in pieces, a thread doing it leaves the main thread to run between them."""
    text = json.dumps(_report(40_000))
    beats = {"whole": 0, "pieces": 0}
    for name, parse in (("whole", json.loads), ("pieces", json_chunks.loads)):
        done = threading.Event()
        result: list[object] = []
        def work(p=parse, out=result, ended=done) -> None:
            out.append(p(text))
            ended.set()

        worker = threading.Thread(target=work)
        worker.start()
        while not done.is_set():
            time.sleep(0.001)
            beats[name] += 1
        worker.join()
        assert result[0] == json.loads(text)
    # whole: the main thread waits out the parse (a beat or two); in pieces it keeps beating
    assert beats["pieces"] > 3 * max(1, beats["whole"])
