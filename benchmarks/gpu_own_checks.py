"""Issue 41: TileLang example files that define a check, on a GPU host: how many cells are
compared with the file's own check, before and after (two laya_tui trees side by side).

Runs the ``cuda`` cells of the given example files in-process, one process per file (as a
worker would run them), with the ``laya_tui`` first on ``PYTHONPATH``, and prints one JSON
line per cell: status, reason, each comparison (output, value, limit, the check's name).
``--summary OLD.jsonl NEW.jsonl`` compares two runs.

On the H200 (TileLang carried as wheels, see the device notes), from the repository root:

    PYTHONPATH=SITE:. python3 benchmarks/gpu_own_checks.py EXAMPLES new @files.txt > new.jsonl
    PYTHONPATH=SITE:OLD python3 benchmarks/gpu_own_checks.py EXAMPLES old @files.txt >old.jsonl
    python3 benchmarks/gpu_own_checks.py --summary old.jsonl new.jsonl

Figures: benchmarks/results/h200-own-checks.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

FILE_SECONDS = int(os.environ.get("FILE_SECONDS", "150"))  # one file's cells, at most


def _detail(signal: dict[str, Any]) -> dict[str, Any]:
    return signal.get("detail") or {}


def one(examples: str, tag: str, rel: str) -> list[dict[str, Any]]:
    """The cells of one example file, run in this process (a fresh one per file)."""
    import logging
    import signal

    def _alarm(*_: Any) -> None:
        raise TimeoutError(f"harness: file over {FILE_SECONDS} s")

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(FILE_SECONDS)
    logging.disable(logging.WARNING)
    from laya_tui.api import Context, Skipped, Unexamined
    from laya_tui.families.tilelang.cell import run_cell
    from laya_tui.families.tilelang.discover import matrix_cells

    path = os.path.join(examples, rel)
    target = os.environ.get("TARGET", "cuda")
    cells = [c for c in matrix_cells({"kernels": [os.path.dirname(path)], "workspace": examples})
             if os.path.realpath(c["kwargs"]["file"]) == os.path.realpath(path)
             and c["kwargs"].get("target") in (target, "")]
    out = []
    for c in cells:
        cid = f"{c['name']}[{c['id']}]"
        sig: list[dict[str, Any]] = []
        ctx = Context("tilelang/" + cid, "tilelang", lambda e, sig=sig: sig.append(e["signal"]),
                      opts={"out": f"/tmp/o-{tag}", "workspace": examples}, add_dep=lambda p: None)
        t0 = time.time()
        reason: str | None = None
        try:
            run_cell(ctx, **c["kwargs"])
            st = "failed" if ctx.failures else "ok"
            reason = "; ".join(map(str, ctx.failures))[:300] if ctx.failures else None
        except Skipped as e:
            st, reason = "skipped", str(e)[:300]
        except Unexamined as e:
            st, reason = "error", str(e)[:300]
        except BaseException as e:  # noqa: BLE001 - recorded, the next cell goes on
            st, reason = "crash", f"{type(e).__name__}: {e}"[:300]
        logs = [s.get("reason") or s.get("subject") for s in sig if s.get("kind") == "log"]
        out.append({
            "tag": tag, "file": rel, "cell": cid, "status": st, "reason": reason,
            "s": round(time.time() - t0, 1),
            "compared": [{"subject": s.get("subject"), "value": s.get("value"),
                          "limit": s.get("limit"), "passed": s.get("passed"),
                          "check": _detail(s).get("check") or _detail(s).get("reference"),
                          "reason": s.get("reason")}
                         for s in sig if s.get("kind") == "tolerance"],
            "no_reference": [x for x in logs if x and "ref" in str(x)][:2],
            "lowering": [{**{k: _detail(s).get(k) for k in
                             ("outcome", "run_skipped", "not_run", "not_compared",
                              "pass_bisection")}, "fix": s.get("fix")}
                         for s in sig if s.get("kind") == "lowering"]})
    return out


def rows(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The cell lines of one run (a file's own prints may precede a line)."""
    out = {}
    with open(path) as f:
        for line in f:
            i = line.find('{"tag"')
            if i >= 0:
                r = json.loads(line[i:])
                if r.get("cell"):
                    out[(r["file"], r["cell"].split("[")[0])] = r
    return out


def summary(old_path: str, new_path: str) -> dict[str, Any]:
    """Cells compared with the file's own check, before and after, and what changed."""
    def state(r: dict[str, Any] | None) -> str:
        return "absent" if r is None else "compared" if r["compared"] else r["status"]

    old, new = rows(old_path), rows(new_path)
    keys = sorted(set(old) | set(new))
    changed = {f"{k[0]}::{k[1]}": [state(old.get(k)), state(new.get(k))] for k in keys
               if state(old.get(k)) != state(new.get(k))}
    return {"files": len({k[0] for k in keys}), "kernels": len(keys),
            "compared_before": sum(state(old.get(k)) == "compared" for k in keys),
            "compared_after": sum(state(new.get(k)) == "compared" for k in keys),
            "changed": changed}


def main() -> None:
    if sys.argv[1] == "--summary":
        print(json.dumps(summary(sys.argv[2], sys.argv[3]), indent=1))
        return
    examples, tag = os.path.abspath(sys.argv[1]), sys.argv[2]
    arg = sys.argv[3]
    files = (open(arg[1:]).read().strip() if arg.startswith("@") else arg).split(",")
    with ProcessPoolExecutor(int(os.environ.get("JOBS", "8")), max_tasks_per_child=1) as pool:
        futs = {pool.submit(one, examples, tag, f): f for f in files}
        for fut in as_completed(futs):
            try:
                for r in fut.result():
                    print(json.dumps(r), flush=True)
            except BaseException as e:  # noqa: BLE001 - one file's harness failure
                print(json.dumps({"tag": tag, "file": futs[fut], "status": "harness",
                                  "reason": repr(e)[:300]}), flush=True)


if __name__ == "__main__":
    main()
