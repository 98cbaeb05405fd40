"""Graph breaks as Dynamo records them, deduplicated by (reason, user frame).

Dynamo keeps one ``GraphCompileReason`` per graph break in
``torch._dynamo.utils.graph_break_reasons`` (reason text and user stack), and counts only
some of them in ``counters["graph_break"]`` (a data-dependent ``if`` on a tensor, reason
"generic_jump TensorVariable()", is in the first and not the second). This module reads the
reasons, parses Dynamo's structured message (graph-break type, explanation, hints), looks
the type up in Dynamo's graph-break registry (``GBxxxx`` id, documentation link) and names
each hint's category from ``torch/_dynamo/graph_break_hints.py`` where the installed torch
has them. Counter entries with no matching reason (older torch) are kept from the counter.
Worker side: torch is imported lazily.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from laya_tui.families.explain.sites import format_frame

FIX_GRAPH_BREAK = "rewrite the construct Dynamo cannot trace"
#: Old-style reasons without Dynamo's structured message: (explanation, fix).
KNOWN_REASONS: dict[str, tuple[str, str]] = {
    "generic_jump": (
        "data-dependent control flow: a Python branch (if/while/and/or) on a tensor's value "
        "needs the value on the host, so Dynamo ends the graph there",
        "branch on device with torch.where / torch.cond, or decide outside the compiled "
        "region"),
}


@dataclass
class GraphBreak:
    """One deduplicated graph break: its reason at one user frame, and how often."""

    headline: str
    site: dict[str, Any] | None
    count: int = 0
    stack: list[str] = field(default_factory=list)
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    gb_type: str | None = None
    gb_id: str | None = None
    doc: str | None = None
    hint_categories: list[str] = field(default_factory=list)
    source: str = "graph_break_reasons"

    def fix(self) -> str:
        """The first actionable hint, else a known fix, else the generic advice."""
        for hint in self.hints:
            if not _is_boilerplate(hint):
                return hint
        known = _known(self.headline)
        return known[1] if known else FIX_GRAPH_BREAK

    def detail(self) -> dict[str, Any]:
        """Fields for the fallback signal's ``detail``."""
        out: dict[str, Any] = {"graph_break": True, "explanation": self.explanation,
                               "source": self.source}
        if self.gb_type:
            out["graph_break_type"] = self.gb_type
        if self.gb_id:
            out["graph_break_id"] = self.gb_id
        if self.doc:
            out["documentation"] = self.doc
        if self.hints:
            out["hints"] = self.hints
        if self.hint_categories:
            out["hint_categories"] = self.hint_categories
        if self.stack:
            out["stack"] = self.stack
        return out


def parse_reason(text: str) -> dict[str, Any]:
    """Dynamo's graph-break message -> headline, explanation, hints (debug context dropped)."""
    lines = str(text).splitlines()
    headline = lines[0].strip() if lines else str(text)
    explanation: list[str] = []
    hints: list[str] = []
    current: list[str] | None = None
    for raw in lines[1:]:
        ln = raw.strip()
        if ln.startswith("Explanation:"):
            explanation = [ln[len("Explanation:"):].strip()]
            current = explanation
        elif ln.startswith("Hint:"):
            hints.append(ln[len("Hint:"):].strip())
            current = None
        elif ln.startswith(("Developer debug context:", "For more details")) or not ln:
            current = None
        elif current is not None:
            current.append(ln)
        elif hints and raw.startswith("    "):
            hints[-1] += " " + ln
    return {"headline": headline, "explanation": " ".join(explanation) or None,
            "hints": hints}


def _known(headline: str) -> tuple[str, str] | None:
    for prefix, value in KNOWN_REASONS.items():
        if headline.startswith(prefix):
            return value
    return None


def _norm(text: str) -> str:
    return " ".join(text.split())


def _is_boilerplate(hint: str) -> bool:
    return bool(hint_categories([hint]))


_CATEGORIES: dict[str, str] | None = None


def _category_table() -> dict[str, str]:
    """normalised hint text -> category name, from torch's graph_break_hints (if present)."""
    global _CATEGORIES
    if _CATEGORIES is None:
        _CATEGORIES = {}
        try:
            from torch._dynamo import graph_break_hints as gbh
        except ImportError:
            return _CATEGORIES
        for name, value in vars(gbh).items():
            if name.isupper() and isinstance(value, list):
                for hint in value:
                    if isinstance(hint, str):
                        _CATEGORIES[_norm(hint)] = name
    return _CATEGORIES


def hint_categories(hints: list[str]) -> list[str]:
    """The graph_break_hints categories (``SUPPORTABLE``, ``FUNDAMENTAL``...) among hints."""
    table = _category_table()
    out: list[str] = []
    for hint in hints:
        name = table.get(_norm(hint))
        if name and name not in out:
            out.append(name)
    return out


def _registry() -> dict[str, Any]:
    try:
        from torch._dynamo.exc import _load_gb_type_to_gb_id_map
    except ImportError:
        return {}
    try:
        return dict(_load_gb_type_to_gb_id_map())
    except Exception:  # noqa: BLE001 - a missing registry file is not a finding
        return {}


def _doc_link(gb_type: str) -> str | None:
    try:
        from torch._dynamo.exc import get_gbid_documentation_link
    except ImportError:
        return None
    try:
        return get_gbid_documentation_link(gb_type)
    except Exception:  # noqa: BLE001
        return None


def collect(reasons: list[Any], counter_deltas: dict[str, int], *,
            with_stack: bool = True) -> list[GraphBreak]:
    """Deduplicate ``reasons`` (GraphCompileReason objects) by (headline, innermost user
    frame); add counter entries whose text matches no reason."""
    out: dict[tuple[str, Any], GraphBreak] = {}
    registry: dict[str, Any] | None = None
    seen_heads: set[str] = set()
    for r in reasons:
        text = str(getattr(r, "reason", r))
        parsed = parse_reason(text)
        head = parsed["headline"]
        seen_heads.add(head)
        frames = list(getattr(r, "user_stack", None) or [])
        site = None
        if frames:
            inner = frames[-1]
            site = {"file": inner.filename, "line": inner.lineno, "func": inner.name}
        key = (head, None if site is None else (site["file"], site["line"], site["func"]))
        gb = out.get(key)
        if gb is None:
            if registry is None:
                registry = _registry()
            gb = out[key] = _make(head, parsed, site, registry)
            if with_stack and frames:
                gb.stack = [format_frame({"file": f.filename, "line": f.lineno,
                                          "func": f.name}) for f in reversed(frames[-7:])]
        gb.count += 1
    for text, n in counter_deltas.items():
        parsed = parse_reason(text)
        if parsed["headline"] in seen_heads or n <= 0:
            continue
        if registry is None:
            registry = _registry()
        gb = _make(parsed["headline"], parsed, None, registry)
        gb.count, gb.source = n, "counter"
        out[(parsed["headline"], None)] = gb
    return list(out.values())


def _make(head: str, parsed: dict[str, Any], site: dict[str, Any] | None,
          registry: dict[str, Any]) -> GraphBreak:
    gb = GraphBreak(headline=head, site=site, explanation=parsed["explanation"],
                    hints=parsed["hints"])
    if head in registry:
        gb.gb_type = head
        ident = registry[head]
        gb.gb_id = ident if isinstance(ident, str) else None
        gb.doc = _doc_link(head)
    elif parsed["explanation"] or parsed["hints"]:
        gb.gb_type = head  # a structured message whose type the registry does not list
    known = _known(head)
    if known and not gb.explanation:
        gb.explanation = known[0]
    gb.hint_categories = hint_categories(gb.hints)
    return gb
