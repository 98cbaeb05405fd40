"""Issue 41 measure: laya-tui on TileLang kernel files from repositories other than TileLang's.

Runs laya-tui headless on foreign kernel files (provenance in ``benchmarks/foreign_kernels.json``,
none copied here since their licences do not allow it or are unknown), then checks each ``c``
cell laya-tui lowered or refused with TileLang itself: the kernel's factory is called at the
cell's arguments in a fresh interpreter and lowered with ``tilelang.compile(..., target="c")``;
outcome (lowered/refused) and the refusal's first line are compared.

Two ways to hand laya-tui the files:

* ``--repos DIR``: as a user does, in their project. ``DIR/<owner>+<name>/repo`` (or
  ``DIR/<owner>+<name>``) is a git directory of each repository (a ``git clone --mirror``);
  each is checked out at the manifest's commit into a scratch folder, which is the workspace
  of one laya-tui run whose ``--kernels`` are the manifest's files. Writes
  ``benchmarks/results/cpu-2core-foreign-kernels-repos.json``.
* ``--from DIR``: each file alone, in one folder (no project around it). Writes
  ``benchmarks/results/cpu-2core-foreign-kernels.json``.

A cell is *examined* when it reached TileLang (traced, lowered or refused, built, compared);
a cell skipped for want of arguments is not, and is counted apart when nothing in its
repository gives them.

    python benchmarks/bench_foreign_kernels.py --repos /path/to/mirrors [--site DEPS]
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
sys.path.insert(0, str(ROOT))
from laya_tui.core.project_paths import pythonpath_of  # noqa: E402  (the project's test paths)

MANIFEST = ROOT / "benchmarks" / "foreign_kernels.json"
RESULT = ROOT / "benchmarks" / "results" / "cpu-2core-foreign-kernels.json"
#: ``--site DIR``: folders of the projects' own dependencies (e3nn for tilelang-mace)
SITE: list[str] = []
RESULT_REPOS = ROOT / "benchmarks" / "results" / "cpu-2core-foreign-kernels-repos.json"
NOT_EXAMINED = ("could not be examined", "kernel arguments unknown")
#: a skipped cell's reason when no file of its repository gives its arguments
NO_SIZES = ("nothing in its file builds it", "nothing in its file or the files",
            "nothing to examine until")

# Runs in a fresh interpreter: import the file, call the top-level function that defines the
# kernel at the cell's arguments, unwrap to a PrimFunc and lower it for C.
CHECK = r"""
import ast, importlib.util, inspect, json, sys
path, line, args = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
import importlib, os
import tilelang  # before the file's folder joins the path (a file may be named tilelang.py)
folder, dotted = os.path.dirname(os.path.realpath(path)), os.path.basename(path)[:-3]
while os.path.isfile(os.path.join(folder, "__init__.py")):  # import it as its package's
    folder, dotted = os.path.dirname(folder), os.path.basename(folder) + "." + dotted
sys.path.append(folder)
def out(**kw):
    print("@@" + json.dumps(kw)); sys.exit(0)
tree = ast.parse(open(path).read())
owner = next((n.name for n in tree.body if isinstance(n, (ast.FunctionDef,))
              and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
if owner is None:
    out(outcome="unchecked", message=f"no top-level function holds line {line}")
try:
    if "." in dotted:
        mod = importlib.import_module(dotted)
    else:
        spec = importlib.util.spec_from_file_location("foreign_kernel", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    obj = getattr(mod, owner)
    if hasattr(obj, "get_tir"):  # @tilelang.jit: TileLang's own trace at these arguments
        made = obj.get_tir(**args)
    else:
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


def run_laya(kernels: list[Path], work: Path, workspace: Path | None = None
             ) -> dict[str, Any]:
    report = work / "r.json"
    # laya-tui as installed (this repository's own demo ``kernels/`` must not be on the
    # path: a project's ``kernels`` package is the one its files import)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if SITE:  # the projects' own dependencies, installed as their users have them
        env["PYTHONPATH"] = os.pathsep.join(SITE)
    flags = [x for k in kernels for x in ("--kernels", str(k))]
    subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--json", str(report),
         *flags, "--probes", str(ROOT / "probes" / "tilelang_matrix.py"),
         "--jobs", "1", "--no-cache", "--out", str(work / "o"), "--cache-dir", str(work / "c")],
        cwd=workspace or work, env=env, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        raise SystemExit("laya-tui wrote no report")
    return json.loads(report.read_text())


def tilelang_check(file: str, line: int, args: dict[str, Any],
                   paths: list[str]) -> dict[str, str]:
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
           "PYTHONPATH": os.pathsep.join(paths)}
    try:
        # -P: the folder it runs in is not on the path (a kernel file may be named tilelang.py)
        proc = subprocess.run([sys.executable, "-P", "-c", CHECK, file, str(line),
                               json.dumps(args)],
                              capture_output=True, text=True, timeout=300, cwd=Path(file).parent,
                              env=env)
    except subprocess.TimeoutExpired:
        return {"outcome": "unchecked", "message": "timed out after 300 s"}
    for row in proc.stdout.splitlines():
        if row.startswith("@@"):
            return json.loads(row[2:])
    return {"outcome": "unchecked", "message": (proc.stderr.strip().splitlines() or ["?"])[-1]}


def first_line(text: str) -> str:
    return next((x.strip() for x in text.splitlines() if x.strip()), "")


def cell_row(probe: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    low = next((s for s in probe["signals"] if s["kind"] == "lowering"), None)
    detail = (low or {}).get("detail") or {}
    reason = probe.get("reason") or (low or {}).get("reason") or ""
    reached = bool(detail.get("outcome")) and detail.get("outcome") != "not-examined"
    examined = reached and probe["status"] in ("ok", "failed") \
        and not any(n in reason for n in NOT_EXAMINED)
    row = {"id": probe["id"], "status": probe["status"], "outcome": detail.get("outcome"),
           "examined": examined, "reason": first_line(reason)[:300],
           "no_sizes": probe["status"] == "skipped" and any(n in reason for n in NO_SIZES)}
    target = detail.get("target")
    outcome = detail.get("outcome")
    if target == "c" and outcome and outcome != "not-examined":
        laya = "refused" if outcome == "lower-failed" else "lowered"
        site = detail.get("definition") or detail.get("kernel_site") or {}
        tl = tilelang_check(detail.get("file") or probe.get("file") or "",
                            int(site.get("line") or 0), detail.get("args") or {}, paths)
        laya_msg = first_line(detail.get("diagnostic") or "")
        same_msg = bool(laya_msg) and (laya_msg in tl["message"] or tl["message"] in laya_msg)
        agree = tl["outcome"] == laya and (laya == "lowered" or same_msg)
        row.update(laya=laya, laya_message=laya_msg, tilelang=tl["outcome"],
                   tilelang_message=tl["message"],
                   agrees=None if tl["outcome"] == "unchecked" else agree)
    return row


def checkout(mirrors: Path, repo: str, commit: str, into: Path) -> Path | None:
    """The repository at ``commit``, extracted from its git directory under ``mirrors``."""
    name = repo.replace("/", "+")
    for git_dir in (mirrors / name / "repo", mirrors / name, mirrors / name / ".git"):
        if (git_dir / "HEAD").is_file():
            break
    else:
        return None
    dest = into / name
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(src: Path, repos: bool) -> dict[str, Any]:
    manifest = json.loads(MANIFEST.read_text())
    started = time.monotonic()
    files: dict[str, list[dict[str, Any]]] = {}
    missing: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        groups: dict[str, list[tuple[dict[str, Any], Path]]] = {}
        workspaces: dict[str, Path | None] = {}
        for m in manifest:
            if repos:
                key = m["repo"]
                if key not in workspaces:
                    workspaces[key] = checkout(src, key, m["commit"], Path(tmp) / "repos")
                where = workspaces[key]
                path = where / m["path"] if where is not None else None
            else:
                key, workspaces[""] = "", None
                path = src / m["file"]
            if path is None or not path.exists():
                missing.append(m["file"])
                print(f"missing: {m['file']} (fetch it from the repo/path/commit in "
                      f"{MANIFEST.name})")
                continue
            groups.setdefault(key, []).append((m, path.resolve()))
        for n, (key, entries) in enumerate(groups.items()):
            work = Path(tmp) / f"run{n}"
            work.mkdir()
            kernels = [p for _, p in entries] if repos else [src]
            doc = run_laya(kernels, work, workspaces[key])
            where = workspaces[key]
            paths = [str(where), *pythonpath_of(str(where))] if where is not None else []
            probes = [p for p in doc["probes"] if p["family"] == "tilelang"]
            for m, path in entries:
                mine = [p for p in probes
                        if os.path.realpath((p.get("params") or {}).get("file") or "")
                        == str(path)]
                files[m["file"]] = [cell_row(p, paths) for p in mine]
    cells = [c for rows in files.values() for c in rows if not c["id"].endswith("[file]")]
    checked = [c for c in cells if c.get("agrees") is not None]
    table = []
    for m in manifest:
        rows = files.get(m["file"], [])
        real = [c for c in rows if not c["id"].endswith("[file]")]
        accounted = bool(real) or any(c["reason"] for c in rows)
        table.append({"file": m["file"], "repo": m["repo"], "path": m["path"],
                      "accounted": accounted, "cells": len(rows),
                      "examined": sum(c["examined"] for c in rows), "rows": rows})
    no_sizes = sum(c["no_sizes"] for c in cells)
    examined = sum(c["examined"] for c in cells)
    other_tilelang = sum(1 for c in cells if not c["examined"]
                         and "written for another TileLang" in (c["reason"] or ""))
    summary = {
        "mode": "each file in its repository" if repos else "each file alone",
        "files": len(manifest), "files_present": len(manifest) - len(missing),
        "files_accounted": sum(t["accounted"] for t in table),
        "files_without_kernels": sum(1 for t in table if t["rows"] and all(
            c["id"].endswith("[file]") for c in t["rows"])),
        "cells": len(cells),
        "cells_examined": examined,
        "cells_examined_pct": round(100 * examined / len(cells), 1) if cells else None,
        "cells_no_sizes_given": no_sizes,  # by the file (alone) or its repository
        "cells_examined_pct_of_sized": round(100 * examined / (len(cells) - no_sizes), 1)
        if len(cells) > no_sizes else None,
        # files whose import fails on the installed TileLang (``python file.py`` too)
        "cells_written_for_another_tilelang": other_tilelang,
        "cells_examined_pct_of_sized_importable": round(
            100 * examined / (len(cells) - no_sizes - other_tilelang), 1)
        if len(cells) > no_sizes + other_tilelang else None,
        "c_cells_checked_with_tilelang": len(checked),
        "findings_agreeing": sum(bool(c["agrees"]) for c in checked),
        "c_cells_unchecked": sum(1 for c in cells if c.get("tilelang") == "unchecked"),
        "seconds": round(time.monotonic() - started, 1),
    }
    return {"summary": summary, "per_file": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--from", dest="src", type=Path,
                     help="folder holding the files named in foreign_kernels.json (each alone)")
    how.add_argument("--repos", type=Path,
                     help="folder of the repositories' git directories (<owner>+<name>/repo)")
    parser.add_argument("--site", action="append", default=[], metavar="DIR",
                        help="a folder of the projects' own dependencies, put on the run's "
                             "PYTHONPATH (as their users have them installed)")
    opts = parser.parse_args()
    SITE[:] = [str(Path(d).resolve()) for d in opts.site]
    src = opts.repos or opts.src
    if not src.is_dir():
        raise SystemExit(f"{src}: not a folder")
    result = measure(src, repos=opts.repos is not None)
    out = RESULT_REPOS if opts.repos else RESULT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))
    for t in result["per_file"]:
        print(f"{t['file'][:90]:90} accounted={t['accounted']!s:5} cells={t['cells']} "
              f"examined={t['examined']}")
        for c in t["rows"]:
            if "agrees" in c:
                print(f"    {c['id'][-40:]}: laya {c['laya']} / TileLang {c['tilelang']} "
                      f"agrees={c['agrees']}")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
