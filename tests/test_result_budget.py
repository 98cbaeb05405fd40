"""Every result the runner ran carries its budget (the limits it ran under), crashed and
timed-out ones too (issue 42 item 6: crashed cells had ``"budget": null``)."""

from __future__ import annotations

import json

from tests._util import copy_workspace, run_cli

CELLS = ("faults/healthy", "faults/segfault", "faults/aborts", "faults/exits_nonzero",
         "faults/garbage_pipe", "faults/raises")


def _strict(text: str):
    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_every_result_carries_its_budget_crashed_ones_too(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    out = tmp_path / "r.json"
    proc = run_cli("--workspace", str(ws), "--headless", "--no-cache", "-q", "--timeout", "25",
                   *[a for c in CELLS for a in ("--only", c)], "--json", str(out), cwd=ws,
                   timeout=200)
    assert proc.returncode in (0, 1), proc.stderr
    results = {r["id"]: r for r in _strict(out.read_text())["probes"]}
    assert set(results) == set(CELLS)
    statuses = {r["status"] for r in results.values()}
    assert "crashed" in statuses, statuses
    for pid, r in results.items():
        budget = r.get("budget")
        assert isinstance(budget, dict), (pid, r["status"], budget)
        assert budget["timeout"] == 25.0, (pid, budget)
        assert budget["wall_limit"] > budget["timeout"] and budget["cpu_budget"] > 0
        if r["status"] == "crashed":
            assert budget["seconds"] >= 0 and "ended_by" not in budget, (pid, budget)
