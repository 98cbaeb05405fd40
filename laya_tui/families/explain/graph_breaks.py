"""Graph breaks as Dynamo records them, deduplicated by (reason, user frame).

Dynamo keeps one ``GraphCompileReason`` per graph break in
``torch._dynamo.utils.graph_break_reasons`` (reason text and user stack), and counts only
some of them in ``counters["graph_break"]`` (a data-dependent ``if`` on a tensor, reason
"generic_jump TensorVariable()", is in the first and not the second). This module reads the
reasons, parses Dynamo's structured message (graph-break type, explanation, hints), looks
the type up in Dynamo's graph-break registry (``GBxxxx`` id, documentation link) and names
each hint's category from ``torch/_dynamo/graph_break_hints.py`` where the installed torch
has them. A reason Dynamo records in its old terse form ("generic_jump TensorVariable()",
while its log says "Data-dependent branching", GB0170) gets its type, id, explanation and
hints from the registry (``torch/_dynamo/graph_break_registry.json``), on every path.
Counter entries with no matching reason (older torch) are kept from the counter. The site
is the innermost user frame of the break's stack (torch's own frames skipped, resume
functions named after the function they resume, names qualified by class). Worker side:
torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from laya_tui.families.explain.aggregate import SiteKey
from laya_tui.families.explain.records import Detail, GbRegistry, ParsedReason, SiteDict
from laya_tui.families.explain.sites import format_frame, is_user_site, summary_sites

FIX_GRAPH_BREAK = "rewrite the construct Dynamo cannot trace"
#: Old-style reasons without Dynamo's structured message: (explanation, fix).
KNOWN_REASONS: dict[str, tuple[str, str]] = {
    "generic_jump": (
        "data-dependent control flow: a Python branch (if/while/and/or) on a tensor's value "
        "needs the value on the host, so Dynamo ends the graph there",
        "branch on device with torch.where / torch.cond, or decide outside the compiled "
        "region"),
}
#: Old-style reason prefixes -> the graph-break type Dynamo's registry files them under.
OLD_STYLE_TYPES = {"generic_jump": "Data-dependent branching"}
#: User frames kept in ``detail.stack``.
STACK_FRAMES = 16


@dataclass
class GraphBreak:
    """One deduplicated graph break: its reason at one user frame, and how often."""

    headline: str
    site: SiteDict | None
    count: int = 0
    stack: list[str] = field(default_factory=list)
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    gb_type: str | None = None
    gb_id: str | None = None
    doc: str | None = None
    hint_categories: list[str] = field(default_factory=list)
    source: str = "graph_break_reasons"
    #: Dynamo's own reason text when it is the old terse form (the headline is the type)
    dynamo_reason: str | None = None

    def fix(self) -> str:
        """A known fix for an old-style reason, else the first actionable hint, else the
        generic advice."""
        known = _known(self.dynamo_reason or self.headline)
        if known:
            return known[1]
        for hint in self.hints:
            if not _is_boilerplate(hint):
                return hint
        return FIX_GRAPH_BREAK

    def detail(self) -> Detail:
        """Fields for the fallback signal's ``detail``."""
        out: Detail = {"graph_break": True, "explanation": self.explanation,
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
        if self.dynamo_reason:
            out["dynamo_reason"] = self.dynamo_reason
        if self.stack:
            out["stack"] = self.stack
        return out


def parse_reason(text: str) -> ParsedReason:
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


def _registry() -> GbRegistry:
    try:
        from torch._dynamo.exc import _load_gb_type_to_gb_id_map
    except ImportError:
        return {}
    try:
        return dict(_load_gb_type_to_gb_id_map())
    except Exception:  # noqa: BLE001 - a missing registry file is not a finding
        return {}


_TEXTS: dict[str, tuple[str | None, list[str]]] | None = None


def _registry_texts() -> dict[str, tuple[str | None, list[str]]]:
    """gb_type -> (explanation, hints) from torch's graph_break_registry.json: of the
    entries recorded for a type, the one with the most hints whose explanation is text
    (not the source expression a call site passed)."""
    global _TEXTS
    if _TEXTS is not None:
        return _TEXTS
    _TEXTS = {}
    try:
        import json
        import os

        import torch._dynamo as dyn

        path = os.path.join(os.path.dirname(os.path.abspath(dyn.__file__)),
                            "graph_break_registry.json")
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except Exception:  # noqa: BLE001 - no registry file: nothing to add
        return _TEXTS
    best: dict[str, tuple[int, str | None, list[str]]] = {}
    for entries in data.values():
        for e in entries if isinstance(entries, list) else []:
            gb_type, text = e.get("Gb_type"), e.get("Explanation")
            hints = [h for h in e.get("Hints") or [] if isinstance(h, str)
                     and not h.startswith(("*", "_")) and "graph_break_hints" not in h]
            if not isinstance(gb_type, str):
                continue
            clean = isinstance(text, str) and text[:1].isalpha() and not text.startswith("_") \
                and '" ' not in text and "+ " not in text
            score = (2 if clean else 0) * 100 + len(hints)
            if gb_type not in best or score > best[gb_type][0]:
                best[gb_type] = (score, text if clean else None, hints)
    _TEXTS = {k: (v[1], v[2]) for k, v in best.items()}
    return _TEXTS


def _doc_link(gb_type: str) -> str | None:
    try:
        from torch._dynamo.exc import get_gbid_documentation_link
    except ImportError:
        return None
    try:
        return get_gbid_documentation_link(gb_type)
    except Exception:  # noqa: BLE001
        return None


def collect(reasons: Sequence[object], counter_deltas: dict[str, int], *,
            with_stack: bool = True) -> list[GraphBreak]:
    """Deduplicate ``reasons`` (GraphCompileReason objects) by (headline, innermost user
    frame); add counter entries whose text matches no reason."""
    out: dict[tuple[str, SiteKey | None], GraphBreak] = {}
    registry: GbRegistry | None = None
    seen_heads: set[str] = set()
    for r in reasons:
        text = str(getattr(r, "reason", r))
        parsed = parse_reason(text)
        head = parsed["headline"]
        seen_heads.add(head)
        frames = [f for f in summary_sites(list(getattr(r, "user_stack", None) or []))
                  if is_user_site(f)]
        site = frames[0] if frames else None
        key = (head, None if site is None else (site["file"], site["line"], site["func"]))
        gb = out.get(key)
        if gb is None:
            if registry is None:
                registry = _registry()
            gb = out[key] = _make(head, parsed, site, registry)
            if with_stack and frames:
                gb.stack = [format_frame(f) for f in frames[:STACK_FRAMES]]
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


def _make(head: str, parsed: ParsedReason, site: SiteDict | None,
          registry: GbRegistry) -> GraphBreak:
    gb = GraphBreak(headline=head, site=site, explanation=parsed["explanation"],
                    hints=parsed["hints"])
    old = next((t for prefix, t in OLD_STYLE_TYPES.items() if head.startswith(prefix)), None)
    gb_type = head if head in registry else old
    if gb_type is not None and gb_type in registry:
        gb.gb_type = gb_type
        ident = registry[gb_type]
        gb.gb_id = ident if isinstance(ident, str) else None
        gb.doc = _doc_link(gb_type)
        if gb_type != head:  # the old terse form: the registry's type is the headline
            gb.dynamo_reason, gb.headline = head, gb_type
        if not gb.explanation and not gb.hints:
            text, hints = _registry_texts().get(gb_type, (None, []))
            gb.explanation, gb.hints = text, list(hints)
    elif parsed["explanation"] or parsed["hints"]:
        gb.gb_type = head  # a structured message whose type the registry does not list
    known = _known(head)
    if known and not gb.explanation:
        gb.explanation = known[0]
    gb.hint_categories = hint_categories(gb.hints)
    return gb
