"""Read speed of a large TORCH_TRACE folder: laya-tui's reader and import against tlparse, on
the same folder, in one run (docs/architecture.md, 'TORCH_TRACE: reading the logs users have').

Usage: .venv/bin/python benchmarks/bench_torch_trace.py [--source DIR] [--ranks 8] [--mb 200]
                                                        [--repeat 3] [--keep DIR]

The folder is generated from a real log: ``--source`` (a TORCH_TRACE folder or log), else
one written here by torch (a function with two graph breaks called with two shapes, under
``--backend``, default aot_eager). Each rank's file is the source's records replicated with
new frame ids (so many frames per rank) and ``"rank": R`` in every envelope, as torch writes
under torch.distributed; payloads (and their md5) are the real ones. Printed, side by side
and interleaved ``--repeat`` times (medians): laya-tui's record reader alone
(``core.tracelog.read_records``), the whole import (``report.trace_import.read_trace``: the
cells and signals), ``laya-tui import DIR --json`` as a process, and
``tlparse DIR --all-ranks-html`` (which also writes its HTML pages), each as MB/s and
records/s, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from laya_tui.core.tracelog import LogStats, read_records, trace_files  # noqa: E402
from laya_tui.report.trace_gather import want_payload  # noqa: E402
from laya_tui.report.trace_import import read_trace  # noqa: E402

SOURCE_SCRIPT = '''\
import sys
import torch


def f(x):
    y = x.sin()
    if y.sum() > 0:
        y = y * 2
    print("tick")
    return (y.cos() + 1).relu()


cf = torch.compile(f, backend=sys.argv[1], dynamic=False)
for n in (4, 8):
    cf(torch.ones(n))
'''


def write_source(folder: Path, backend: str) -> Path:
    """A real TORCH_TRACE log, written by torch here."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "source.py"
    script.write_text(SOURCE_SCRIPT)
    env = dict(os.environ, TORCH_TRACE=str(folder / "trace"))
    sys.path.insert(0, str(REPO))
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload(env)
    subprocess.run([sys.executable, str(script), backend], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    return folder / "trace"


def _split(path: str) -> tuple[list[bytes], list[tuple[dict | None, bytes, list[bytes]]]]:
    """The log's header lines (records with no frame id before the first frame) and its
    records: (envelope or None, prefix, payload lines)."""
    records: list[tuple[dict | None, bytes, list[bytes]]] = []
    with open(path, "rb") as fh:
        for line in fh:
            if line.startswith(b"\t") and records:
                records[-1][2].append(line)
                continue
            head, sep, body = line.partition(b"] ")
            try:
                env = json.loads(body) if sep else None
            except ValueError:
                env = None
            records.append((env, head + sep, []))
    first = next((i for i, (e, _, _) in enumerate(records) if e and "frame_id" in e),
                 len(records))
    header = [p + json.dumps(e).encode() + b"\n" + b"".join(pl)
              for e, p, pl in records[:first] if e is not None]
    return header, records[first:]


def generate(source: str, out: Path, ranks: int, mb: float) -> tuple[int, int]:
    """``ranks`` files of about ``mb`` MB in all; returns (bytes, copies per rank)."""
    header, body = _split(source)
    frames = [e.get("frame_id") for e, _, _ in body if e and isinstance(e.get("frame_id"), int)]
    stride = (max(frames) + 1) if frames else 1
    body_bytes = sum(len(p) + len(json.dumps(e)) + 1 + sum(len(x) for x in pl)
                     for e, p, pl in body if e is not None)
    copies = max(1, int(mb * 1e6 / ranks / max(1, body_bytes)))
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for rank in range(ranks):
        path = out / f"dedicated_log_torch_trace_rank_{rank}_bench.log"
        with open(path, "wb") as fh:
            for h in header:
                fh.write(h)
            for k in range(copies):
                for env, prefix, payload in body:
                    if env is None:
                        continue
                    e = dict(env, rank=rank)
                    if isinstance(e.get("frame_id"), int):
                        e["frame_id"] += k * stride
                    fh.write(prefix + json.dumps(e).encode() + b"\n")
                    fh.writelines(payload)
        total += path.stat().st_size
    return total, copies


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def reader_only(folder: str) -> tuple[float, float, int]:
    """(wall, CPU seconds, records) of the record reader alone over every log."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for f in trace_files(folder):
        stats = LogStats(f)
        for _ in read_records(f, stats, want_payload):
            pass
        n += stats.records
    return time.perf_counter() - t0, time.process_time() - c0, n


def whole_import(folder: str) -> tuple[float, float]:
    """(wall, CPU seconds) of the import: every cell and signal."""
    t0, c0 = time.perf_counter(), time.process_time()
    read_trace(folder)
    return time.perf_counter() - t0, time.process_time() - c0


def _timed(cmd: list[str], **kwargs: object) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - t0, _children_cpu() - c0


def cli_import(folder: str, tmp: Path) -> tuple[float, float]:
    """``laya-tui import DIR --json`` as a process (start-up and the report's writing)."""
    return _timed([sys.executable, "-m", "laya_tui", "import", folder, "--json",
                   str(tmp / "imported.json")], cwd=REPO)


def tlparse(exe: str, folder: str, tmp: Path) -> tuple[float, float]:
    """``tlparse DIR --all-ranks-html`` (it also renders its pages)."""
    return _timed([exe, folder, "--all-ranks-html", "-o", str(tmp / "tl_out"), "--overwrite",
                   "--no-browser"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="a TORCH_TRACE folder or log to replicate")
    ap.add_argument("--backend", default="aot_eager", help="torch.compile backend of the "
                    "generated source log (default aot_eager; inductor adds its records)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--mb", type=float, default=200.0, help="total size to generate")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="keep the generated folder here")
    args = ap.parse_args()
    exe = os.path.join(os.path.dirname(sys.executable), "tlparse")
    if not os.path.isfile(exe):
        exe = shutil.which("tlparse") or ""
    with tempfile.TemporaryDirectory(prefix="laya-bench-trace-") as tmp_s:
        tmp = Path(tmp_s)
        src = args.source or str(write_source(tmp / "src", args.backend))
        source_log = trace_files(src)[0]
        folder = Path(args.keep) if args.keep else tmp / "trace"
        size, copies = generate(source_log, folder, args.ranks, args.mb)
        load0 = os.getloadavg()
        runs: dict[str, list[tuple[float, float]]] = {"reader": [], "import": [], "cli": [],
                                                      "tlparse": []}
        records = 0
        for _ in range(max(1, args.repeat)):
            wall, cpu, records = reader_only(str(folder))
            runs["reader"].append((wall, cpu))
            runs["import"].append(whole_import(str(folder)))
            runs["cli"].append(cli_import(str(folder), tmp))
            if exe:
                runs["tlparse"].append(tlparse(exe, str(folder), tmp))
        load1 = os.getloadavg()
    mbytes = size / 1e6
    print(f"source: {source_log} ({os.path.getsize(source_log) / 1e6:.2f} MB), replicated "
          f"{copies}x per rank into {args.ranks} ranks: {mbytes:.1f} MB, {records} records")
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f} "
          f"({os.cpu_count()} CPUs); medians of {args.repeat}, interleaved; CPU = the "
          "process's own CPU time (less sensitive to a loaded machine than wall)")
    print(f"{'':<30} {'wall s':>7} {'CPU s':>7} {'MB/s':>7} {'MB/s CPU':>9} "
          f"{'records/s':>10} {'rec/s CPU':>10}")
    names = {"reader": "laya-tui record reader", "import": "laya-tui import (in process)",
             "cli": "laya-tui import --json (CLI)", "tlparse": "tlparse --all-ranks-html"}
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in runs.items() if v}
    for key, (wall, cpu) in med.items():
        print(f"{names[key]:<30} {wall:7.3f} {cpu:7.3f} {mbytes / wall:7.1f} "
              f"{mbytes / cpu:9.1f} {records / wall:10.0f} {records / cpu:10.0f}")
    if "tlparse" in med:
        for key in ("reader", "import", "cli"):
            print(f"tlparse / {names[key]}: wall {med['tlparse'][0] / med[key][0]:.2f}x, "
                  f"CPU {med['tlparse'][1] / med[key][1]:.2f}x")
    else:
        print("tlparse not installed (pip install tlparse): no comparison")
    return 0


if __name__ == "__main__":
    sys.exit(main())
