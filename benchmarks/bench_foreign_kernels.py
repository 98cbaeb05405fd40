"""Issue 41 measure: laya-tui on TileLang kernel files from repositories other than TileLang's.

Runs laya-tui headless on a folder of foreign kernel files (``--from DIR``; provenance in
``benchmarks/foreign_kernels.json``, none copied here since their licences do not allow it or
are unknown), then checks each ``c`` cell laya-tui lowered or refused with TileLang itself:
the kernel's factory is called at the cell's arguments in a fresh interpreter and lowered with
``tilelang.compile(..., target="c")``; outcome (lowered/refused) and the refusal's first line are
compared. Prints and writes ``benchmarks/results/cpu-2core-foreign-kernels.json``.

    python benchmarks/bench_foreign_kernels.py --from /path/to/foreign_kernels
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "benchmarks" / "foreign_kernels.json"
RESULT = ROOT / "benchmarks" / "results" / "cpu-2core-foreign-kernels.json"
NOT_EXAMINED = ("could not be examined", "kernel arguments unknown")

# Runs in a fresh interpreter: import the file, call the top-level function that defines the
# kernel at the cell's arguments, unwrap to a PrimFunc and lower it for C.
CHECK = r"""
import ast, importlib.util, inspect, json, sys
path, line, args = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
import tilelang
def out(**kw):
    print("@@" + json.dumps(kw)); sys.exit(0)
tree = ast.parse(open(path).read())
owner = next((n.name for n in tree.body if isinstance(n, (ast.FunctionDef,))
              and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
if owner is None:
    out(outcome="unchecked", message=f"no top-level function holds line {line}")
spec = importlib.util.spec_from_file_location("foreign_kernel", path)
mod = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(mod)
    obj = getattr(mod, owner)
    fn = getattr(obj, "func", None) if not inspect.isfunction(obj) else obj
    fn = fn or obj
    params = inspect.signature(fn).parameters
    made = fn(**{k: v for k, v in args.items() if k in params})
    for _ in range(4):
        if type(made).__name__ == "PrimFunc":
            break
        inner = getattr(made, "prim_func", None) or getattr(made, "func", None)
        if inner is None:
            names = inspect.signature(made).parameters
            inner = made(**{k: v for k, v in args.items() if k in names})
        made = inner
except Exception as exc:
    text = (str(exc).splitlines() or [""])[0]
    out(outcome="unchecked", message=f"{type(exc).__name__}: {text}")
try:
    tilelang.compile(made, target="c")
except Exception as exc:
    lines = [l for l in str(exc).splitlines() if l.strip()]
    hits = [l for l in lines if "Check failed" in l or "Error" in l]
    first = (hits or lines or [""])[0]
    out(outcome="refused", message=first.strip())
out(outcome="lowered", message="")
"""


def run_laya(kernels: Path, work: Path) -> dict[str, Any]:
    report = work / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--json", str(report),
         "--kernels", str(kernels), "--probes", str(ROOT / "probes" / "tilelang_matrix.py"),
         "--jobs", "1", "--no-cache", "--out", str(work / "o"), "--cache-dir", str(work / "c")],
        cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        raise SystemExit("laya-tui wrote no report")
    return json.loads(report.read_text())


def tilelang_check(file: str, line: int, args: dict[str, Any]) -> dict[str, str]:
    try:
        proc = subprocess.run([sys.executable, "-c", CHECK, file, str(line), json.dumps(args)],
                              capture_output=True, text=True, timeout=300, cwd=Path(file).parent,
                              env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    except subprocess.TimeoutExpired:
        return {"outcome": "unchecked", "message": "timed out after 300 s"}
    for row in proc.stdout.splitlines():
        if row.startswith("@@"):
            return json.loads(row[2:])
    return {"outcome": "unchecked", "message": (proc.stderr.strip().splitlines() or ["?"])[-1]}


def first_line(text: str) -> str:
    return next((x.strip() for x in text.splitlines() if x.strip()), "")


def cell_row(probe: dict[str, Any]) -> dict[str, Any]:
    low = next((s for s in probe["signals"] if s["kind"] == "lowering"), None)
    detail = (low or {}).get("detail") or {}
    reason = probe.get("reason") or (low or {}).get("reason") or ""
    examined = probe["status"] not in ("error",) and not any(n in reason for n in NOT_EXAMINED)
    row = {"id": probe["id"], "status": probe["status"], "outcome": detail.get("outcome"),
           "examined": examined, "reason": first_line(reason)[:300]}
    target = detail.get("target")
    outcome = detail.get("outcome")
    if target == "c" and outcome and outcome != "not-examined":
        laya = "refused" if outcome == "lower-failed" else "lowered"
        site = detail.get("definition") or detail.get("kernel_site") or {}
        tl = tilelang_check(detail.get("file") or probe.get("file") or "",
                            int(site.get("line") or 0), detail.get("args") or {})
        laya_msg = first_line(detail.get("diagnostic") or "")
        same_msg = bool(laya_msg) and (laya_msg in tl["message"] or tl["message"] in laya_msg)
        agree = tl["outcome"] == laya and (laya == "lowered" or same_msg)
        row.update(laya=laya, laya_message=laya_msg, tilelang=tl["outcome"],
                   tilelang_message=tl["message"],
                   agrees=None if tl["outcome"] == "unchecked" else agree)
    return row


def measure(kernels: Path) -> dict[str, Any]:
    manifest = json.loads(MANIFEST.read_text())
    missing = [m["file"] for m in manifest if not (kernels / m["file"]).exists()]
    for name in missing:
        print(f"missing: {name} (fetch it from the repo/path/commit in {MANIFEST.name})")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        doc = run_laya(kernels, Path(tmp))
        probes = [p for p in doc["probes"] if p["family"] == "tilelang"]
        files: dict[str, list[dict[str, Any]]] = {}
        for m in manifest:
            if m["file"] in missing:
                continue
            stem = m["file"][:-3]
            mine = [p for p in probes if p["id"].split("[")[0].split("/", 1)[1].split(".")[0]
                    == stem]
            files[m["file"]] = [cell_row(p) for p in mine]
    cells = [c for rows in files.values() for c in rows]
    checked = [c for c in cells if c.get("agrees") is not None]
    table = []
    for m in manifest:
        rows = files.get(m["file"], [])
        real = [c for c in rows if not c["id"].endswith("[file]")]
        accounted = bool(real) or any(c["reason"] for c in rows)
        table.append({"file": m["file"], "repo": m["repo"], "path": m["path"],
                      "accounted": accounted, "cells": len(rows),
                      "examined": sum(c["examined"] for c in rows), "rows": rows})
    summary = {
        "files": len(manifest), "files_present": len(manifest) - len(missing),
        "files_accounted": sum(t["accounted"] for t in table), "cells": len(cells),
        "cells_examined": sum(c["examined"] for c in cells),
        "c_cells_checked_with_tilelang": len(checked),
        "findings_agreeing": sum(bool(c["agrees"]) for c in checked),
        "c_cells_unchecked": sum(1 for c in cells if c.get("tilelang") == "unchecked"),
        "seconds": round(time.monotonic() - started, 1),
    }
    return {"summary": summary, "per_file": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="src", type=Path,
                        default=ROOT / "benchmarks" / "foreign_kernels",
                        help="folder holding the files named in foreign_kernels.json")
    opts = parser.parse_args()
    if not opts.src.is_dir():
        raise SystemExit(f"--from {opts.src}: not a folder")
    result = measure(opts.src)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))
    for t in result["per_file"]:
        print(f"{t['file'][:90]:90} accounted={t['accounted']!s:5} cells={t['cells']} "
              f"examined={t['examined']}")
        for c in t["rows"]:
            if "agrees" in c:
                print(f"    {c['id'][-40:]}: laya {c['laya']} / TileLang {c['tilelang']} "
                      f"agrees={c['agrees']}")
    print(f"wrote {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
