"""Read back the state word each output gives each cell (issue 42): the tree, the HTML
page's probes table, JUnit, SARIF, markdown, the annotations, the headless summary and
``show --headless``. Used by tests/test_states_everywhere.py and benchmarks/bench_states.py.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from typing import Any

from laya_tui.core.report_types import ReportDict
from laya_tui.report.views.legend import STATE_MARKS, State, state_mark

Words = dict[str, str]  # cell id -> the state word an output gives it


def word_of(text: str) -> str | None:
    """The state word a text opens with (``◐ built, not run: ...`` -> ``built, not run``)."""
    for mark in sorted(STATE_MARKS.values(), key=lambda m: -len(m.label)):
        if text.startswith(mark.label):
            return mark.word
    return None


def html_words(report: ReportDict) -> Words:
    from laya_tui.report.views.page import page_data

    return {row[0]: row[2] for row in page_data(report)["probes"]}


def junit_words(text: str) -> Words:
    """A skipped / failure / error message opens with the state; a case that passes opens
    its ``system-out`` with it when it is not ok (a finding no gate reads); else ok."""
    out: Words = {}
    for case in ET.fromstring(text).iter("testcase"):
        if case.get("classname") == "laya-tui.gates":
            continue
        pid = f"{case.get('classname')}/{case.get('name')}"
        kids = [k for k in case if k.tag in ("skipped", "failure", "error")]
        said = case.find("system-out")
        if kids:
            word = word_of(kids[0].get("message") or "")
        elif said is not None and word_of(said.text or ""):
            word = word_of(said.text or "")
        else:
            word = state_mark(State.OK).word
        if word is not None:
            out[pid] = word
    return out


def sarif_words(doc: Mapping[str, Any]) -> Words:
    return {r["properties"]["probe"]: r["properties"]["state"]
            for run in doc["runs"] for r in run["results"] if "state" in r["properties"]}


def markdown_words(text: str) -> Words:
    """The tables whose first column is a state."""
    out: Words = {}
    for m in re.finditer(r"^\| ([^|`]+) \| `([^`]+)` \|", text, re.M):
        word = word_of(m.group(1).strip())
        if word is not None:
            out[m.group(2)] = word
    return out


def annotation_words(text: str) -> Words:
    """A cell that is not ok opens its annotation's message with its state."""
    out: Words = {}
    for line in text.splitlines():
        m = re.match(r"::\w+ [^:]*::(.*)$", line)
        pid = re.search(r"[Pp]robe ([\w/\[\],.+-]+?)[ .:]", m.group(1)) if m else None
        if m and pid:
            word = word_of(m.group(1))
            if word is not None:
                out[pid.group(1)] = word
    return out


def summary_words(text: str) -> Words:
    """The headless summary's (and ``show --headless``'s) one line per cell not ok."""
    out: Words = {}
    for line in text.splitlines():
        word = word_of(line.strip())
        m = re.match(r"\s+\S+ [^:]+: (\S+?)(?::|$)", line)
        if word is not None and m:
            out[m.group(1)] = word
    return out


def tree_words(report: dict[str, Any]) -> Words:
    """The probe tree's label of each cell (its glyph, and its word when not ok)."""
    from laya_tui.tui.model import ProbeState
    from laya_tui.tui.widgets.probe_tree import probe_label

    out: Words = {}
    for p in report.get("probes", []):
        st = ProbeState(id=p["id"], family=p.get("family", ""), status=p["status"],
                        reason=p.get("reason"), seconds=p.get("seconds"),
                        error=p.get("error"), report_entry=p)
        st.kinds = Counter(s.get("kind") for s in p.get("signals", []))
        label = str(probe_label(st))
        glyph, _, rest = label.partition(" ")
        marks = [m for m in STATE_MARKS.values() if m.glyph == glyph]
        named = [m for m in marks if f"  {m.word}" in rest]
        if named:
            out[p["id"]] = named[0].word
        elif marks == [STATE_MARKS[State.OK]]:
            out[p["id"]] = marks[0].word
    return out


def disagreements(want: Words, outputs: Mapping[str, Words]) -> list[tuple[str, str, str, str]]:
    """``(output, cell, its word, the report's word)`` for every cell an output names with
    another word than the report's state."""
    return [(name, pid, word, want[pid]) for name, cells in outputs.items()
            for pid, word in cells.items() if pid in want and word != want[pid]]
