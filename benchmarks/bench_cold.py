"""Cold-run benchmark: one headless run from an empty home folder, against the library work
it contains.

Usage: .venv/bin/python benchmarks/bench_cold.py [--only GLOB] [--jobs N] [--report PATH]
       .venv/bin/python benchmarks/bench_cold.py --from-report PATH   (figures of a report)

The run gets a fresh ``HOME`` (no result cache, no AOTI packages), a fresh
``TORCHINDUCTOR_CACHE_DIR`` (Inductor's on-disk caches live under /tmp otherwise, warm from
earlier runs) and ``--no-cache``. Printed, measured in this one run: wall time, CPU time of
the whole process tree, and the seconds of inherent library work the report's timing
signals record (torch.export, AOTInductor packaging, torch.compile's first call in the AOTI
cells, TileLang lowering and builds not served from TileLang's cache) with the ratio
wall / library work. With ``--jobs 2`` two families run at once, so the ratio can go
below 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def library_seconds(report: dict) -> dict[str, float]:
    """Seconds of inherent library work per kind, from the report's timing signals."""
    out: dict[str, float] = defaultdict(float)
    for p in report["probes"]:
        fam = p.get("family")
        for s in p.get("signals", []):
            if s.get("kind") != "timing" or not isinstance(s.get("seconds"), (int, float)):
                continue
            detail = s.get("detail") or {}
            subject = str(s.get("subject", ""))
            if fam == "aoti" and subject in ("export", "package", "compile"):
                if not detail.get("cached"):
                    out[f"aoti {subject}"] += s["seconds"]
            elif fam == "tilelang" and subject.rsplit("/", 1)[-1] in ("lower", "build"):
                if not detail.get("cached"):
                    out[f"tilelang {subject.rsplit('/', 1)[-1]}"] += s["seconds"]
    return dict(out)


def describe(report: dict, wall: float | None, cpu: float | None) -> None:
    lib = library_seconds(report)
    total = sum(lib.values())
    s = report["summary"]
    wall = s["seconds"] if wall is None else wall
    print(f"{s['probes']} probes, status {s['status']}")
    print(f"wall {wall:.1f} s" + (f", CPU (whole process tree) {cpu:.1f} s" if cpu else ""))
    for k, v in sorted(lib.items()):
        print(f"  library work: {k}: {v:.1f} s")
    if total:
        print(f"inherent library work {total:.1f} s; wall / library work = {wall / total:.2f}x")
    fams: dict[str, float] = defaultdict(float)
    for p in report["probes"]:
        fams[p["family"]] += p.get("seconds") or 0.0
    print("probe seconds per family: " + ", ".join(f"{f} {v:.1f}" for f, v in
                                                   sorted(fams.items(), key=lambda x: -x[1])))
    slow = sorted(report["probes"], key=lambda p: -(p.get("seconds") or 0))[:8]
    for p in slow:
        steps = [f"{x['subject']} {x['seconds']:.1f}" for x in p.get("signals", [])
                 if x.get("kind") == "timing" and p["family"] == "aoti"
                 and x.get("subject") in ("export", "package", "compile", "load-fresh")]
        print(f"  {p['seconds']:7.1f} s {p['id']} {p['status']}"
              + (f" ({', '.join(steps)})" if steps else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report", default=None, help="keep the report here")
    ap.add_argument("--from-report", default=None, help="only print a report's figures")
    args = ap.parse_args()
    if args.from_report:
        describe(json.loads(Path(args.from_report).read_text()), None, None)
        return
    with tempfile.TemporaryDirectory(prefix="laya-cold-") as tmp:
        home, inductor = Path(tmp) / "home", Path(tmp) / "inductor"
        home.mkdir()
        inductor.mkdir()
        out = args.report or str(Path(tmp) / "report.json")
        env = dict(os.environ, HOME=str(home), TORCHINDUCTOR_CACHE_DIR=str(inductor),
                   PYTHONPATH=str(REPO), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        env.pop("XDG_CACHE_HOME", None)
        cmd = [sys.executable, "-m", "laya_tui", "--headless", "--no-cache", "--quiet",
               "--jobs", str(args.jobs), "--json", out]
        for o in args.only:
            cmd += ["--only", o]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-800:]}")
        print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        describe(json.loads(Path(out).read_text()), wall, cpu)


if __name__ == "__main__":
    main()
