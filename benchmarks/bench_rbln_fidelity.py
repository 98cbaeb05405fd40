"""RBLN mapping fidelity: signals per real-shaped dump, and the cold/warm diff of a steady region.

Usage: .venv/bin/python benchmarks/bench_rbln_fidelity.py [--before REV]

The dumps are ``tests/fixtures/rbln/llama_fp16_{cold,warm}.json``, built by torch-rbln
0.12.0's own ``dump()`` from real-shaped counters (``build_dumps.py``): the warm region
repeats the cold one's fallbacks at other counts. The mapping "before" is
``laya_tui/regions/rbln.py`` as it was at ``REV`` (read with ``git show``, default the commit
this work started from); "after" is the working tree. For each: signals per dump by kind,
overhead signals (fallback/recompile/host_bounce/cast), and the cold -> warm diff:
persisted (same identity in both), changed (persisted with another count), gone, appeared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from laya_tui.families.explain.aggregate import OVERHEAD_KINDS, signal_identity  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "rbln"
BEFORE = "00896bf"


def load_before(rev: str) -> types.ModuleType | None:
    """``laya_tui/regions/rbln.py`` at ``rev`` as a module (None when git cannot show it)."""
    try:
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:laya_tui/regions/rbln.py"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    # that revision predates the layers: its imports name the old package path
    src = src.replace("laya_tui.regions", "laya_tui.families.explain")
    mod = types.ModuleType("rbln_before")
    exec(compile(src, f"{rev}:rbln.py", "exec"), mod.__dict__)
    return mod


def signals(map_dump: Any, dump: dict[str, Any], phase: str, **kw: Any) -> list[dict[str, Any]]:
    agg, extras = map_dump(dump, "forward", phase=phase, **kw)
    out = [dict(e.fields(), kind=e.kind) for e in agg]
    out += [dict(x) for x in extras]
    return out


def diff(cold: list[dict[str, Any]], warm: list[dict[str, Any]]) -> dict[str, int]:
    def index(sigs: list[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
        out: dict[tuple[str, str, str], int] = {}
        for s in sigs:
            if s.get("kind") in OVERHEAD_KINDS and (s.get("count") or 0) > 0:
                k = signal_identity(s)
                out[k] = out.get(k, 0) + int(s["count"])
        return out

    a, b = index(cold), index(warm)
    return {"persisted": sum(k in a for k in b),
            "changed": sum(k in a and a[k] != b[k] for k in b),
            "gone": sum(k not in b for k in a),
            "appeared": sum(k not in a for k in b)}


def row(name: str, cold: list[dict[str, Any]], warm: list[dict[str, Any]]) -> None:
    kinds = Counter(s["kind"] for s in cold)
    overhead = sum(kinds[k] for k in OVERHEAD_KINDS)
    d = diff(cold, warm)
    print(f"{name:7} signals/dump {len(cold):3} (overhead {overhead:2}; "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")")
    print(f"{'':7} cold->warm: persisted {d['persisted']:2}  changed {d['changed']:2}  "
          f"gone {d['gone']:2}  appeared {d['appeared']:2}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE, help="git revision of the old mapping")
    args = ap.parse_args()
    cold = json.loads((FIX / "llama_fp16_cold.json").read_text())
    warm = json.loads((FIX / "llama_fp16_warm.json").read_text())
    from laya_tui.families.explain.rbln import map_dump
    from laya_tui.families.explain.rbln_sites import SiteResolver

    old = load_before(args.before)
    if old is not None:
        row("before", signals(old.map_dump, cold, "cold"), signals(old.map_dump, warm, "warm"))
    else:
        print(f"before: git cannot show {args.before}:laya_tui/regions/rbln.py (skipped)")
    res = SiteResolver(modules=[], roots=[])
    row("after", signals(map_dump, cold, "cold", resolver=res),
        signals(map_dump, warm, "warm", resolver=res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
