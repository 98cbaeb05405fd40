"""laya-tui over TileLang's whole ``examples/`` folder: how many cells reach TileLang, what
could not be examined and why, and whether every failing cell's ``repro.py`` agrees.

Usage: .venv/bin/python benchmarks/bench_tilelang_examples.py EXAMPLES_DIR
       [--lower-only cuda|all|none] [--jobs N] [--shards N] [--deadline S] [--only GLOB]
       [--repro-jobs N] [--json PATH] [--keep DIR]

EXAMPLES_DIR is a checkout's ``examples/`` (e.g. ``git archive <tag> examples`` of
tile-ai/tilelang; never committed here). Every folder holding ``*.py`` files is one
``--kernels`` folder of a single headless laya-tui run (``--only 'tilelang/*'``, an empty
workspace, no cache); ``--lower-only cuda`` (the default) skips the nvcc builds of cuda cells
on a machine where they cannot run anyway (``LAYA_TUI_TILELANG_LOWER_ONLY``). Then every
failing cell's ``repro.py`` runs (plain Python, no laya-tui, in processes forked from one
that imported TileLang) and its last line is compared with the cell's reason.

Printed, all from this one run: files, kernels, cells; cells whose kernel the files call;
cells reaching TileLang (lowered, or traced by TileLang and failing there); cells skipped
and could not be examined, by cause; seconds; repro agreement of every failing cell, with
the disagreements listed (a disagreement is a finding TileLang itself does not confirm).
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: cell outcomes that mean TileLang lowered the kernel, or traced it and failed there
REACHED = ("lowered", "built", "ran", "lower-failed", "build-failed", "run-failed")


def kernel_folders(examples: Path) -> list[Path]:
    return sorted({p.parent for p in examples.rglob("*.py")
                   if "__pycache__" not in p.parts})


def _command(folders: list[Path], out: Path, args: argparse.Namespace,
             shard: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--no-cache",
           "--jobs", str(args.jobs), "--workspace", str(out / "ws"),
           "--json", str(out / "r.json"), "--out", str(out / "o"),
           "--cache-dir", str(out / "c")]
    if shard:
        cmd += ["--shard", shard]
    for only in args.only:
        cmd += ["--only", only]
    for f in folders:
        cmd += ["--kernels", str(f)]
    return cmd


def _harvest(out: Path) -> list[dict[str, Any]]:
    """The cells a killed run finished: its per-cell result files."""
    found = []
    for f in sorted((out / "c").glob("*.json")):
        try:
            found.append(json.loads(f.read_text())["result"])
        except (OSError, ValueError, KeyError):
            continue
    return found


def run_laya(folders: list[Path], out: Path, args: argparse.Namespace) -> tuple[dict, float]:
    """One headless run, or ``--shards`` of them at once (``--shard k/N``), killed at
    ``--deadline``; a killed shard gives the cells it finished."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    if args.lower_only != "none":
        env["LAYA_TUI_TILELANG_LOWER_ONLY"] = "1" if args.lower_only == "all" else "cuda"
    parts = []
    for k in range(1, args.shards + 1):
        part = out / (f"shard{k}" if args.shards > 1 else ".")
        (part / "ws").mkdir(parents=True, exist_ok=True)
        shard = f"{k}/{args.shards}" if args.shards > 1 else None
        log = open(part / "laya.log", "w")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(_command(folders, part, args, shard), cwd=part / "ws", env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        parts.append((part, proc, log))
    t0 = time.perf_counter()
    killed = 0
    for _part, proc, log in parts:
        left = None if args.deadline is None else max(1.0, args.deadline -
                                                      (time.perf_counter() - t0))
        try:
            proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            killed += 1
        log.close()
    seconds = time.perf_counter() - t0
    probes: list[dict[str, Any]] = []
    for part, _proc, _log in parts:
        report = part / "r.json"
        if report.exists():
            probes += json.loads(report.read_text())["probes"]
        else:
            probes += _harvest(part)
    if not probes:
        raise SystemExit(f"laya-tui wrote no report; see {out}/*/laya.log")
    return {"probes": probes, "killed_shards": killed}, seconds


def _cause(status: str, reason: str) -> str:
    if status == "error":
        if "the GPU ran out of memory" in reason:
            return "GPU out of memory (shared by the shards)"
        for key in ("kernel arguments unknown", "could not import",
                    "could not build the kernel object"):
            if key in reason:
                return key
        return reason.split(":")[0][:60]
    if "is defined but nothing in its file builds it" in reason:
        return "never called by its file"
    if "needs a GPU" in reason:
        return "needs a GPU to be traced here"
    if "cpu=True is the fp32 specialization" in reason:
        return "factory cpu spec is fp32 only"
    return reason.split(":")[0][:60]


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    cells = [p for p in doc["probes"] if p["family"] == "tilelang"]
    called = [p for p in cells if p["params"].get("called", True)]
    out: dict[str, Any] = {"cells": len(cells), "called": len(called),
                           "kernels": len({p["params"]["kernel"] for p in cells}),
                           "files": len({p["params"]["file"] for p in cells})}
    reached = lowered = 0
    skipped: collections.Counter[str] = collections.Counter()
    unexamined: collections.Counter[str] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    failing = []
    for p in cells:
        statuses[p["status"]] += 1
        low = next((s for s in p["signals"] if s["kind"] == "lowering"), None)
        d = (low or {}).get("detail") or {}
        reason = p.get("reason") or (low or {}).get("reason") or ""
        # a cell that lowered and built but found no GPU memory to run reached TileLang
        if d.get("outcome") in REACHED or (p["status"] == "error" and d.get("stage") == "run"):
            reached += p in called
            lowered += p in called and d.get("stage") not in ("factory", "import")
        if p["status"] == "skipped":
            skipped[_cause("skipped", reason)] += 1
        elif p["status"] in ("error", "timeout", "crashed"):
            unexamined[_cause("error", reason) if p["status"] == "error"
                       else p["status"]] += 1
        if p["status"] == "failed" and d.get("repro"):
            failing.append({"id": p["id"], "reason": (low or {}).get("reason") or "",
                            "repro": d["repro"], "stage": d.get("stage")})
    gpu_skips = sum(1 for p in called if p["status"] == "skipped"
                    and "needs a GPU" in (p.get("reason") or ""))
    out.update(statuses=dict(statuses), reached=reached, lowered=lowered,
               reached_share=round(reached / max(1, len(called)), 4),
               reached_share_without_gpu_only=round(
                   reached / max(1, len(called) - gpu_skips), 4),
               gpu_only=gpu_skips, skipped=dict(skipped), not_examined=dict(unexamined),
               failing=failing)
    return out


def cell_records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per cell: id, status, seconds, outcome, stage, reason, its checks and reference."""
    out = []
    for p in doc["probes"]:
        if p["family"] != "tilelang":
            continue
        low = next((s for s in p["signals"] if s["kind"] == "lowering"), None) or {}
        d = low.get("detail") or {}
        out.append({"id": p["id"], "status": p["status"], "seconds": p.get("seconds"),
                    "outcome": d.get("outcome"), "stage": d.get("stage"),
                    "reason": (p.get("reason") or low.get("reason") or "")[:3000],
                    "backend": d.get("execution_backend"), "reference": d.get("reference"),
                    "checks": d.get("checks"), "run_skipped": d.get("run_skipped"),
                    "built_by": d.get("built_by")})
    return out


def _repro_child(path: str, conn: Any) -> None:
    buf = io.StringIO()
    code = 0
    try:
        with redirect_stdout(buf), redirect_stderr(io.StringIO()):
            import runpy

            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = int(exc.code or 0)
    except BaseException as exc:  # noqa: BLE001 - a crashing repro disagrees
        buf.write(f"\nrepro crashed: {type(exc).__name__}: {exc}")
        code = 2
    conn.send((code, buf.getvalue()))
    conn.close()


def _gpu_here() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True)
    return proc.stdout.strip().endswith("True")


def run_repros(failing: list[dict[str, Any]], jobs: int, timeout: float) -> dict[str, Any]:
    """Each repro in its own process: forked from this one with TileLang imported on a
    machine without a GPU (fast), a fresh ``python repro.py`` where CUDA is (a forked CUDA
    context cannot be used)."""
    if _gpu_here():
        return _judge(failing, _run_fresh(failing, jobs, timeout))
    import tilelang  # noqa: F401 - imported once, inherited by every fork
    import torch  # noqa: F401

    ctx = mp.get_context("fork")
    results: dict[str, tuple[int, str]] = {}
    todo = list(failing)
    running: list[tuple[Any, Any, dict[str, Any], float]] = []
    while todo or running:
        while todo and len(running) < jobs:
            cell = todo.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_repro_child, args=(cell["repro"], child))
            proc.start()
            child.close()
            running.append((proc, parent, cell, time.perf_counter()))
        time.sleep(0.05)
        for item in list(running):
            proc, parent, cell, t0 = item
            if parent.poll():
                try:
                    results[cell["id"]] = parent.recv()
                except EOFError:
                    results[cell["id"]] = (3, "repro died")
                proc.join()
                running.remove(item)
            elif not proc.is_alive() or time.perf_counter() - t0 > timeout:
                proc.kill()
                proc.join()
                results.setdefault(cell["id"], (4, "repro timed out or died"))
                running.remove(item)
    return _judge(failing, results)


def _run_fresh(failing: list[dict[str, Any]], jobs: int,
               timeout: float) -> dict[str, tuple[int, str]]:
    from concurrent.futures import ThreadPoolExecutor

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    site = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and "laya" not in p and p != str(REPO)]
    if site:  # where TileLang was installed, never laya-tui
        env["PYTHONPATH"] = os.pathsep.join(site)

    def one(cell: dict[str, Any]) -> tuple[str, tuple[int, str]]:
        try:
            proc = subprocess.run([sys.executable, cell["repro"]], capture_output=True,
                                  text=True, timeout=timeout, env=env,
                                  cwd=os.path.dirname(cell["repro"]))
            return cell["id"], (proc.returncode, proc.stdout)
        except subprocess.TimeoutExpired:
            return cell["id"], (4, "repro timed out")

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return dict(pool.map(one, failing))


def _same(a: str, b: str) -> bool:
    """The same diagnostic, what changes between processes aside (object addresses, the
    fragment TileLang's layout inference happens to name first)."""
    from laya_tui.families.tilelang.diagnostics import same_diagnostic

    return same_diagnostic(a, b)


def _judge(failing: list[dict[str, Any]], results: dict[str, tuple[int, str]]
           ) -> dict[str, Any]:
    agree: list[dict[str, Any]] = []
    disagree: list[dict[str, Any]] = []
    for cell in failing:
        code, text = results.get(cell["id"], (5, ""))
        last = text.strip().splitlines()[-1] if text.strip() else ""
        (agree if code == 1 and _same(last, cell["reason"]) else disagree).append(
            {"id": cell["id"], "stage": cell["stage"], "reason": cell["reason"],
             "repro_exit": code, "repro_said": last[:300]})
    return {"agree": len(agree), "disagree": disagree}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", type=Path)
    ap.add_argument("--lower-only", choices=("cuda", "all", "none"), default="cuda")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1, help="laya-tui runs at once (--shard)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="kill unfinished runs after this many seconds")
    ap.add_argument("--repro-jobs", type=int, default=2)
    ap.add_argument("--repro-timeout", type=float, default=300)
    ap.add_argument("--only", action="append", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cells-json", default=None,
                    help="one compact record per cell (status, outcome, reason, checks)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run's files here")
    args = ap.parse_args(argv)
    args.only = args.only or ["tilelang/*"]
    folders = kernel_folders(args.examples.resolve())
    files = sum(1 for f in folders for p in f.glob("*.py"))
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        doc, seconds = run_laya(folders, out, args)
        s = summarize(doc)
        if args.cells_json:
            Path(args.cells_json).write_text(json.dumps(cell_records(doc), indent=0) + "\n")
        t0 = time.perf_counter()
        repro = run_repros(s["failing"], args.repro_jobs, args.repro_timeout)
        repro_s = time.perf_counter() - t0
    s.update(folders=len(folders), py_files=files, seconds=round(seconds, 1),
             shards=args.shards, killed_shards=doc.get("killed_shards", 0),
             repro_seconds=round(repro_s, 1), repro_agree=repro["agree"],
             repro_disagree=repro["disagree"], lower_only=args.lower_only,
             load_before=[round(x, 2) for x in load],
             load_after=[round(x, 2) for x in os.getloadavg()])
    failing = s.pop("failing")
    s["failing_cells"] = len(failing)
    print(f"examples: {len(folders)} folders, {files} .py files; {s['files']} files with "
          f"kernels, {s['kernels']} kernels, {s['cells']} cells ({s['called']} of kernels the "
          f"files call)")
    print(f"statuses: {s['statuses']}")
    print(f"reached TileLang: {s['reached']} of {s['called']} called-kernel cells "
          f"({100 * s['reached_share']:.1f}%; {100 * s['reached_share_without_gpu_only']:.1f}% "
          f"leaving out the {s['gpu_only']} that need a GPU to be traced); lowered: "
          f"{s['lowered']}")
    print(f"skipped by cause: {s['skipped']}")
    print(f"could not be examined by cause: {s['not_examined']}")
    print(f"seconds: laya-tui {s['seconds']}, repro.py checks {s['repro_seconds']} "
          f"(load {s['load_before']} -> {s['load_after']}, --lower-only {args.lower_only})")
    print(f"repro.py agreement: {s['repro_agree']} of {len(failing)} failing cells")
    for d in repro["disagree"]:
        print(f"  DISAGREES {d['id']} [{d['stage']}]: cell said {d['reason'][:120]!r}; "
              f"repro exit {d['repro_exit']}: {d['repro_said'][:160]!r}")
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=1) + "\n")
    return 0 if not repro["disagree"] else 1


if __name__ == "__main__":
    sys.exit(main())
