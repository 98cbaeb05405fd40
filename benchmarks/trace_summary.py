"""Where a run's time went, from its ``--trace`` file (or a report, traced on the fly).

Usage: python benchmarks/trace_summary.py TRACE.json|REPORT.json [--top N]

Prints the N (default 5) longest probe spans and the longest stage spans, each stage
name's total over the run (library work marked: aoti export/package/compile, tilelang
lower/build, with the ratio wall / that work; recompiles and the explain family's compiles
are not timing stages, benchmarks/bench_cold.py adds them from the report), each family's
share of the summed probe time and the run's wall time (first start to last end), and
whether the trace is well formed (every span closed, children inside parents, time never
going back on a track). Measured from the file given, nothing hard-coded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from laya_tui.core.trace import build_trace, check_trace, spans_of  # noqa: E402

#: Stage names (the last path part of a timing subject) that are inherent library work.
LIBRARY_STAGES = {"aoti": ("export", "package", "compile"), "tilelang": ("lower", "build")}


def stage_totals(stages: list[dict]) -> dict[tuple[str, str], tuple[float, int, bool]]:
    """(family, stage) -> (seconds summed over probes, spans, is library work); a cached
    stage (a lookup, not the work) is its own row, ``NAME (cached)``, never library work."""
    out: dict[tuple[str, str], tuple[float, int, bool]] = {}
    for s in stages:
        name = str(s["name"]).rsplit("/", 1)[-1]
        fam = str(s.get("cat") or "?")
        cached = bool(s["args"].get("cached"))
        lib = name in LIBRARY_STAGES.get(fam, ()) and not cached
        name += " (cached)" if cached else ""
        secs, n, _ = out.get((fam, name), (0.0, 0, lib))
        out[(fam, name)] = (secs + (s["end"] - s["start"]) / 1e6, n + 1, lib)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="a --trace file, or a --json report to trace")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args(argv)
    doc = json.loads(Path(args.path).read_text())
    if "traceEvents" not in doc:
        doc = build_trace(doc)
    problems = check_trace(doc)
    spans = spans_of(doc)
    probes = [s for s in spans if s["depth"] == 0]
    stages = [s for s in spans if s["depth"] > 0]
    if not probes:
        print("no probe spans in this trace")
        return 1
    wall = (max(s["end"] for s in probes) - min(s["start"] for s in probes)) / 1e6
    busy = sum(s["end"] - s["start"] for s in probes) / 1e6
    print(f"{len(probes)} probe spans, {len(stages)} stage spans; wall {wall:.2f} s, "
          f"probe time summed over tracks {busy:.2f} s "
          f"({(doc.get('otherData') or {}).get('start_times', '')})")
    print(f"\nlongest {args.top} probes:")
    for s in sorted(probes, key=lambda s: s["start"] - s["end"])[:args.top]:
        print(f"  {(s['end'] - s['start']) / 1e6:9.2f} s  {s['name']}  "
              f"[{s['args'].get('status')}{', cached' if s['args'].get('cached') else ''}]")
    print(f"\nlongest {args.top} stages:")
    for s in sorted(stages, key=lambda s: s["start"] - s["end"])[:args.top]:
        print(f"  {(s['end'] - s['start']) / 1e6:9.2f} s  {s['name']}  (in {s['root']})")
    totals = stage_totals(stages)
    print(f"\nstage totals over the run (top {args.top}; * = inherent library work):")
    for (fam_name, name), (secs, n, lib) in sorted(totals.items(),
                                                   key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {secs:9.2f} s  {'*' if lib else ' '} {fam_name} {name}  ({n} span(s))")
    lib_total = sum(secs for secs, _, lib in totals.values() if lib)
    if lib_total:
        print(f"library work in the stages {lib_total:.2f} s; wall / library work = "
              f"{wall / lib_total:.2f}x")
    fam: dict[str, float] = {}
    for s in probes:
        name = s.get("cat") or "?"
        fam[name] = fam.get(name, 0.0) + (s["end"] - s["start"]) / 1e6
    print("\nfamily share of the probe time (and of the wall time):")
    for name, secs in sorted(fam.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<10} {secs:9.2f} s  {100 * secs / busy if busy else 0:5.1f} %  "
              f"({100 * secs / wall if wall else 0:5.1f} % of wall)")
    print("\ntrace well formed" if not problems else
          f"\ntrace problems ({len(problems)}): " + "; ".join(problems[:5]))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
