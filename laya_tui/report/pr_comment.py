"""``laya-tui diff BASE NEW --pr-comment PATH``: one markdown comment for a pull request.

What got worse comes first, most severe first (:mod:`laya_tui.report.severity`, the table's
order): drift that grew, new lowering failures, new graph breaks with their lines, more host
bytes per step, then every other regression (broken cells first), then what got better,
then notes in a closed ``<details>``. The first line is a hidden marker
(:data:`MARKER`), so a workflow finds its own comment and updates it instead of adding one
per push (docs/ci.md). The whole comment stays under :data:`MAX_CHARS` (GitHub takes 65,536):
the longest lists are cut first, each cut list ending with a count of what it left out.
Deterministic for a given pair of reports (no clock). Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import ChangeDict, ReportDict, SignalDict
from laya_tui.core.results import signal_key
from laya_tui.core.shapes import as_dict
from laya_tui.report.baseline import regressed
from laya_tui.report.diff import DiffDict
from laya_tui.report.markdown import _cell, _code
from laya_tui.report.rules import is_graph_break
from laya_tui.report.severity import KIND_SEVERITY, Severity
from laya_tui.report.sources import Location, Sources

MARKER = "<!-- laya-tui -->"
MAX_CHARS = 65_000
ROWS = 25  # rows per list before the size limit cuts more

Item = ChangeDict


def link_base(env: Mapping[str, str] | None = None) -> str | None:
    """``https://github.com/OWNER/REPO/blob/SHA/`` from the Actions environment, or None.

    ``LAYA_TUI_SHA`` (the pull request's head) wins over ``GITHUB_SHA`` (on a
    ``pull_request`` event, the merge commit)."""
    env = os.environ if env is None else env
    server, repo = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY")
    sha = env.get("LAYA_TUI_SHA") or env.get("GITHUB_SHA")
    if not (server and repo and sha):
        return None
    return f"{server.rstrip('/')}/{repo}/blob/{sha}/"


@dataclass
class _List:
    """One list of the comment: a bold title, a table header, rows; cut to ``shown``."""

    title: str
    header: list[str]
    rows: list[str]
    shown: int = ROWS
    more: str = "more in the JSON diff (laya-tui diff --json)"
    titled: bool = True

    def lines(self) -> list[str]:
        if not self.rows:
            return []
        n = min(self.shown, len(self.rows))
        title = [f"**{self.title}** ({len(self.rows)})", ""] if self.titled else []
        out = [*title, *self.header, *self.rows[:n]]
        if n < len(self.rows):
            cols = self.header[0].count("|") - 1
            out.append("| … " + "| " * (cols - 1) + f"| {len(self.rows) - n} {self.more} |")
        return out + [""]


@dataclass
class _Comment:
    head: list[str]
    worse: list[_List] = field(default_factory=list)
    better: list[_List] = field(default_factory=list)
    notes: _List | None = None
    foot: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = list(self.head)
        body = [ln for lst in self.worse for ln in lst.lines()]
        if body:
            lines += ["### What got worse", "", *body]
        body = [ln for lst in self.better for ln in lst.lines()]
        if body:
            lines += ["### What got better", "", *body]
        if self.notes and self.notes.rows:
            lines += ["<details><summary>Notes (" + str(len(self.notes.rows)) + ")</summary>",
                      "", *self.notes.lines(), "</details>", ""]
        lines += self.foot
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines) + "\n"

    def lists(self) -> list[_List]:
        return [*self.worse, *self.better, *([self.notes] if self.notes else [])]


def _bytes(n: object) -> str:
    if not isinstance(n, int):
        return "–"
    size = float(abs(n))
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            text = f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
            return ("-" if n < 0 else "") + text
        size /= 1024
    return str(n)  # pragma: no cover


def _g(v: object) -> str:
    return f"{v:.3g}" if isinstance(v, float) else ("–" if v is None else str(v))


class _Where:
    """``file:line`` of a change, linked to the pull request's tree when it can be."""

    def __init__(self, sources: Sources, base: str | None) -> None:
        self.sources, self.base = sources, base

    def __call__(self, sig: SignalDict | None) -> str:
        loc = self.sources.site(sig.get("site")) if sig else None
        detail = sig.get("detail") if sig else None
        if loc is None and isinstance(detail, Mapping):
            loc = self.sources.site(detail.get("kernel_site"))
        return self.text(loc)

    def text(self, loc: Location | None) -> str:
        if loc is None:
            return ""
        label = f"{loc.path}:{loc.line}" if loc.line else loc.path
        code = _code(label) + (f" {_cell(loc.func)}" if loc.func else "")
        if not self.base:
            return code
        anchor = f"#L{loc.line}" if loc.line else ""
        return f"[{_code(label)}]({self.base}{loc.path}{anchor})" + (
            f" {_cell(loc.func)}" if loc.func else "")


#: A change's signal key: its subject and reason as the JSON has them (null in a change
#: matches no signal).
_Key = tuple[str, str, str | None, str | None]


def _signals(report: ReportDict) -> dict[_Key, SignalDict]:
    out: dict[_Key, SignalDict] = {}
    for p in report.get("probes") or ():
        for s in p.get("signals") or ():
            if isinstance(s, Mapping):
                out.setdefault(signal_key(s, p["id"]), s)
    return out


def _cells(report: ReportDict) -> dict[tuple[str, str | None], SignalDict]:
    out: dict[tuple[str, str | None], SignalDict] = {}
    for p in report.get("probes") or ():
        for s in p.get("signals") or ():
            if isinstance(s, Mapping) and s.get("kind") == "lowering":
                cell = (p["id"], str(s.get("subject", "")))
                if s.get("passed") is False or cell not in out:
                    out[cell] = s
    return out


def _key(item: Item) -> _Key:
    """The signal key of a change (its subject and reason as the JSON has them)."""
    return (item["probe"], item["kind"], item.get("subject", ""), item.get("reason", ""))


def _subject(item: Item) -> str:
    """A lowering or tolerance change's subject: the kernel or check (always a string)."""
    return cast(str, item.get("subject", ""))


def _count(side: Mapping[str, object]) -> str:
    n = side.get("count")
    return str(n) if isinstance(n, int) else "0"


def _side(item: Item, name: str) -> JsonObject:
    """A change's ``before`` or ``after`` facts, as the report's JSON has them."""
    return as_dict(item.get(name))


def _gb(sig: SignalDict | None, item: Item) -> str:
    d = as_dict(sig.get("detail")) if sig else {}
    gb = d.get("graph_break_id")
    text = f"{gb} " if gb else ""
    return _cell(text + str(item.get("reason") or ""))


def _tables(items: list[Item], new_sigs: Mapping[_Key, SignalDict],
            old_sigs: Mapping[_Key, SignalDict],
            new_cells: Mapping[tuple[str, str | None], SignalDict],
            old_cells: Mapping[tuple[str, str | None], SignalDict],
            where: Callable[[SignalDict | None], str],
            worse: bool) -> list[_List]:
    gbs, host, low, drift, other = [], [], [], [], []
    for item in sorted(items, key=lambda i: KIND_SEVERITY.get(i["kind"], Severity.OTHER)):
        kind = item["kind"]
        sig = (new_sigs if worse or item["change"] != "gone" else old_sigs).get(_key(item)) \
            or old_sigs.get(_key(item))
        probe = _code(item["probe"])
        before, after = _side(item, "before"), _side(item, "after")
        if kind == "fallback" and (sig is not None and is_graph_break(sig)
                                   or item.get("subject") == "graph break"):
            gbs.append(f"| {where(sig)} | {_gb(sig, item)} | {_count(before)} → "
                       f"{_count(after)} | {probe} |")
        elif kind == "host_bounce":
            delta = (after.get("bytes") or 0) - (before.get("bytes") or 0)
            host.append(f"| {where(sig)} | {_cell(item.get('subject', ''))} "
                        f"({_cell(item.get('reason', ''))}) | {_bytes(before.get('bytes'))} | "
                        f"{_bytes(after.get('bytes'))} | {'+' if delta > 0 else ''}"
                        f"{_bytes(delta)} | {_count(before)} → {_count(after)} | {probe} |")
        elif kind == "lowering":
            cell = (item["probe"], item.get("subject", ""))
            s = (new_cells if worse else old_cells).get(cell) or new_cells.get(cell)
            d = as_dict(s.get("detail")) if s else {}
            diag = after.get("reason") if worse else before.get("reason")
            stage = d.get("pass") or d.get("stage") or ""
            low.append(f"| {_code(_subject(item))} | {_cell(stage)} | {where(s)} | "
                       f"{_cell(diag or '')} |")
        elif kind == "tolerance" and item["change"] in ("now-failing", "worse", "better",
                                                        "now-passing"):
            limit = after.get("limit") or before.get("limit")
            drift.append(f"| {_code(_subject(item))} | {_g(before.get('value'))} | "
                         f"{_g(after.get('value'))} | {_g(limit)} | {probe} |")
        else:
            other.append(f"| {probe} | {where(sig) if kind != 'probe' else ''} | "
                         f"{_cell(item['message'])} |")
    if worse:
        titles = ("New graph breaks", "More host traffic per step", "New lowering failures",
                  "Drift that grew", "Other regressions")
    else:
        titles = ("Graph breaks gone or fewer", "Less host traffic per step",
                  "Lowering fixed", "Drift that shrank", "Other improvements")
    return [  # most severe first (report.severity)
        _List(titles[3], ["| check | before | after | limit | probe |",
                          "|---|---:|---:|---:|---|"], drift),
        _List(titles[2], ["| kernel | pass | where | first diagnostic |",
                          "|---|---|---|---|"], low),
        _List(titles[0], ["| where | graph break | count | probe |", "|---|---|---|---|"], gbs),
        _List(titles[1], ["| where | transfer | before | after | Δ bytes | count | probe |",
                          "|---|---|---:|---:|---:|---|---|"], host),
        _List(titles[4], ["| probe | where | change |", "|---|---|---|"], other),
    ]


def build_pr_comment(section: DiffDict, base: ReportDict,
                     new: ReportDict, *, base_label: str = "BASE",
                     new_label: str = "NEW", sources: Sources | None = None,
                     links: str | None = None, max_chars: int = MAX_CHARS) -> str:
    """The comment for ``section`` (:func:`laya_tui.report.diff.diff_reports` of ``base``
    and ``new``); ``sources``: where the call sites are; ``links``: the blob URL prefix of
    the pull request's tree (:func:`link_base`), for linked lines."""
    where = _Where(sources or Sources(os.getcwd(), env={}), links)
    regs, imps, notes = (list(section.get("regressions") or ()),
                         list(section.get("improvements") or ()), list(section.get("notes") or ()))
    new_sigs, old_sigs = _signals(new), _signals(base)
    new_cells, old_cells = _cells(new), _cells(base)
    p = section.get("probes") or {}
    verdict = "❌" if regs else "✅"
    head = [MARKER, f"## laya-tui: {verdict} {regressed(regs)} regression(s), {len(imps)} "
            f"improvement(s)", "",
            f"{_code(base_label)} → {_code(new_label)}: {p.get('compared', 0)} of "
            f"{p.get('after', 0)} probe(s) compared.", ""]
    if isinstance(new.get("summary"), Mapping):  # the new run's story, as its summary says it
        from laya_tui.report.verdict import verdict_line

        head += [f"{_code(new_label)}: {_cell(verdict_line(new))}", ""]
    occ = [(k, v) for k, v in (section.get("occurrences") or {}).items()
           if v.get("before") or v.get("after")]
    if occ:
        head += ["Occurrences: " + ", ".join(
            f"{k} {v['before']} → {v['after']}" for k, v in occ) + ".", ""]
    env = section.get("environment") or {}
    if env:
        head += ["Versions: " + _cell(", ".join(f"{k} {v.get('before')} → {v.get('after')}"
                                                for k, v in env.items())) + ".", ""]
    comment = _Comment(
        head, _tables(regs, new_sigs, old_sigs, new_cells, old_cells, where, True),
        _tables(imps, new_sigs, old_sigs, new_cells, old_cells, where, False),
        _List("Notes", ["| probe | note |", "|---|---|"],
              [f"| {_code(i['probe'])} | {_cell(i['message'])} |" for i in notes],
              titled=False))
    if not regs and not imps:
        comment.head.append("No regression and no improvement.")
    tool = as_dict(new.get("tool"))
    comment.foot = [f"<sub>laya-tui {tool.get('version', '')} · `laya-tui diff "
                    f"{base_label} {new_label} --pr-comment`</sub>"]
    return _fit(comment, max_chars)


def _fit(comment: _Comment, max_chars: int) -> str:
    """Cut the longest lists (halving what they show) until the comment fits."""
    text = comment.render()
    while len(text) > max_chars:
        lists = [lst for lst in comment.lists() if min(lst.shown, len(lst.rows)) > 0]
        if not lists:
            break
        longest = max(lists, key=lambda lst: min(lst.shown, len(lst.rows)))
        longest.shown = min(longest.shown, len(longest.rows)) // 2
        text = comment.render()
    return text if len(text) <= max_chars else text[:max_chars - 2] + "…\n"
