"""Generated-kernel placement from Inductor's provenance record, checked against its output code."""

from __future__ import annotations

import re

import pytest

from laya_tui.families.explain.compiled_calls import CUSTOM, EXTERN, FALLBACK
from laya_tui.families.explain.placement import (
    GENERATED,
    NO_PLACEMENT_CPU,
    UNIT_KERNELS,
    PlacementWatch,
    graph_placement,
    kernel_kind,
)
from laya_tui.families.explain.records import Placement

pytest.importorskip("torch")
import torch  # noqa: E402
from torch._inductor.utils import run_and_get_code  # noqa: E402


def _compile_and_watch(model: torch.nn.Module, x: torch.Tensor) -> tuple[Placement, str]:
    torch._dynamo.reset()
    watch = PlacementWatch()
    watch.start()
    try:
        with torch.no_grad():
            _, codes = run_and_get_code(torch.compile(model), x)
    finally:
        watch.stop()
    got = watch.placement()
    assert got is not None and got["graphs"] == len(codes) == 1
    return got, codes[0]


def _call_body(code: str) -> str:
    return code[code.index("def call(self, args):"):]


def _generated_kernels(code: str) -> list[str]:
    """Names of the kernels Inductor generated (defined through async_compile)."""
    return re.findall(r"^(\w+) = async_compile\.\w+\(", code, re.M)


class Pointwise(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2 + 1).sigmoid()


class MatMul(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.w) * 3


class Sorts(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1).sort(-1).values.sum(-1)


@torch.library.custom_op("laya_placement::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _twice_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Custom(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return twice(x.exp()) + 1


def test_kernel_kind_reads_inductor_kernel_names() -> None:
    assert kernel_kind("cpp_fused_add_mul_0:2") == GENERATED
    assert kernel_kind("triton_poi_fused_add_0:1") == GENERATED
    assert kernel_kind("extern_kernels.addmm:1") == EXTERN
    assert kernel_kind("torch.ops.aten.sort.stable:4") == FALLBACK
    assert kernel_kind("aten._scaled_dot_product_flash_attention_for_cpu.default:3") == FALLBACK
    assert kernel_kind("torch.ops.myns.op.default:3") == CUSTOM


def test_custom_op_input_counted_outside_only() -> None:
    g = graph_placement({"cpp_fused_exp_0:1": ["exp", "twice"],
                         "torch.ops.ns.twice.default:2": ["twice"]})
    assert g.inside == {"exp"} and g.outside == {"twice": CUSTOM}


def test_fully_fused_pointwise_is_all_inside() -> None:
    got, code = _compile_and_watch(Pointwise(), torch.randn(4, 16))
    body = _call_body(code)
    assert "extern_kernels." not in body and "torch.ops." not in body
    assert len(_generated_kernels(code)) == 1
    # mul, add, relu, sigmoid: four post-grad ops in the one generated kernel
    assert got["on_device"] == 4 and got["fallback"] == 0 and got["share"] == 0.0
    assert got["unit"] == UNIT_KERNELS


def test_matmul_is_an_extern_kernel() -> None:
    got, code = _compile_and_watch(MatMul(), torch.randn(4, 8))
    externs = re.findall(r"extern_kernels\.(\w+)\(", _call_body(code))
    assert externs == ["mm"]
    assert got["outside"] == {EXTERN: 1, FALLBACK: 0, CUSTOM: 0}
    assert got["on_device"] == 2  # tanh, mul fused
    assert got["share"] == pytest.approx(1 / 3, abs=1e-5)


def test_sort_is_a_fallback_kernel() -> None:
    got, code = _compile_and_watch(Sorts(), torch.randn(4, 8))
    fallbacks = re.findall(r"torch\.ops\.aten\.(\w+)\.\w+\(", _call_body(code))
    assert fallbacks == ["sort"]
    assert got["outside"][FALLBACK] == 1 and got["fallback"] == 1
    assert got["on_device"] == 2  # add, sum in generated kernels
    assert len(_generated_kernels(code)) == 2


def test_custom_op_is_outside() -> None:
    got, code = _compile_and_watch(Custom(), torch.randn(4, 8))
    assert "torch.ops.laya_placement.twice.default(" in _call_body(code)
    assert got["outside"] == {EXTERN: 0, FALLBACK: 0, CUSTOM: 1}
    assert got["on_device"] == 2  # exp, add


def test_watch_restores_inductor_config() -> None:
    import torch._inductor.config as ic

    before = ic.trace.provenance_tracking_level
    w = PlacementWatch()
    w.start()
    assert ic.trace.provenance_tracking_level >= 1
    w.stop()
    assert ic.trace.provenance_tracking_level == before


def test_region_reports_placement_then_a_region_without_compile_says_so() -> None:
    from laya_tui.families.explain.placement import NOT_RECORDED
    from laya_tui.families.explain.portable import PortableRegion

    torch._dynamo.reset()
    model = MatMul()
    x = torch.randn(4, 8)
    compiled = torch.compile(model)
    with PortableRegion("compiled", model=model) as r, torch.no_grad():
        compiled(x)
    got = r.summary()["placement"]
    assert got["on_device"] == 2 and got["outside"][EXTERN] == 1
    with PortableRegion("warm", model=model) as r, torch.no_grad():
        compiled(x)
    assert r.summary()["placement"]["note"] == NOT_RECORDED


def test_eager_cpu_region_has_no_placement() -> None:
    import os
    import subprocess
    import sys

    code = ("import torch\n"
            "from laya_tui.families.explain.portable import PortableRegion\n"
            "m = torch.nn.Linear(4, 4)\n"
            "with PortableRegion('eager', model=m) as r, torch.no_grad():\n"
            "    m(torch.randn(2, 4))\n"
            "print(r.summary()['placement']['note'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120,
                         env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == NO_PLACEMENT_CPU


def test_fallback_claims_its_own_op_not_its_input() -> None:
    g = graph_placement({"cpp_fused_add_0:1": ["add"], "torch.ops.aten.sort.stable:2":
                         ["sort", "add"]}, {"add": "add", "sort": "sort"})
    assert g.inside == {"add"} and g.outside == {"sort": FALLBACK}


def test_post_grad_targets_read_inductor_logged_graph() -> None:
    import logging

    from laya_tui.families.explain.placement import POST_GRAD, post_grad_targets

    graphs: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if POST_GRAD in (getattr(record, "metadata", None) or {}):
                graphs.append(record.payload)  # type: ignore[attr-defined]

    log, grab = logging.getLogger("torch.__trace"), Grab()
    log.addHandler(grab)
    try:
        _, code = _compile_and_watch(Sorts(), torch.randn(4, 8))
    finally:
        log.removeHandler(grab)
    targets = post_grad_targets(graphs[-1])
    assert targets["sort"] == "sort" and targets["add"] == "add"
    assert targets["sum_1"] == "sum"
