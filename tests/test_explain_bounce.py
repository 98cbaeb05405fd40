"""Host-bounce bytes of data-dependent ops are what the device-to-host copy really moved.

On CUDA each case runs twice, once under the explain region and once under torch's own
profiler, and the region's ``host_bounce`` bytes must equal the profiler's ``Memcpy DtoH``
bytes. On the CPU there is no copy and no bounce is reported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from laya_tui.families.explain.portable import PortableRegion  # noqa: E402


def _cases(dev: str) -> dict[str, Callable[[], Any]]:
    x = torch.randn(1000, device=dev)
    big = torch.randn(1 << 20, device=dev)
    return {
        "nonzero_1k": lambda: torch.nonzero(x),
        "nonzero_1M": lambda: torch.nonzero(big),
        "argwhere_2d": lambda: torch.argwhere(big.view(1024, 1024)),
        "masked_select_1M": lambda: torch.masked_select(big, big > 0),
        "bool_index_1k": lambda: x[x > 0],
        "bool_index_put_tensor": lambda: x.clone().index_put_((x > 0,), x[:1] * 0 + 1),
        "bool_index_put_values": lambda: x.clone().index_put_(
            (x > 0,), torch.ones(int((x > 0).sum()), device=dev)),
        "bool_index_fill_nocopy": lambda: x.clone().__setitem__(x > 0, 0.0),
        "item_f32": lambda: x.sum().item(),
        "item_f64": lambda: x.double().sum().item(),
        "item_i64": lambda: (x > 0).sum().item(),
        "bool": lambda: bool(x[0] > 0),
        "tolist_8": lambda: x[:8].tolist(),
    }


def _region(fn: Callable[[], Any], dev: str) -> tuple[int, int, list[Any]]:
    with PortableRegion("bounce", device=dev) as r:
        fn()
    bounces = [e for e in r.entries if e.kind == "host_bounce"]
    seen = [(e.kind, e.subject, e.bytes, e.count) for e in r.entries]
    return sum(e.bytes or 0 for e in bounces), sum(e.count for e in bounces), seen


def _profiler_d2h(fn: Callable[[], Any], tmp: Path) -> list[int]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    trace = tmp / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    return [int(e["args"]["bytes"]) for e in events
            if e.get("cat") == "gpu_memcpy" and "DtoH" in e.get("name", "")]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (the copy is the GPU's)")
def test_bounce_bytes_match_the_profilers_device_to_host_copies(tmp_path):
    figures, wrong = {}, {}
    for name, fn in _cases("cuda").items():
        fn()  # warm: first-call allocations and lazy inits copy nothing we count
        copies = _profiler_d2h(fn, tmp_path)
        got, count, seen = _region(fn, "cuda")
        figures[name] = (copies, got)
        if (not copies and not name.endswith("_nocopy")) or \
                (got, count) != (sum(copies), len(copies)):
            wrong[name] = (copies, got, count, seen)
    print("bounce figures (profiler DtoH bytes, region bytes):", figures)
    assert not wrong, wrong


def test_no_bounce_on_the_cpu():
    for name, fn in _cases("cpu").items():
        got, count, seen = _region(fn, "cpu")
        assert (got, count) == (0, 0), (name, seen)
