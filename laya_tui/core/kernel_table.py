"""The ``[tool.laya-tui.kernel-args."file.py::kernel"]`` tables: their dtype names and the
check the settings run on them before any worker starts (the TileLang family reads them)."""

from __future__ import annotations

#: dtype spellings in kernel files and tables -> the canonical name
DTYPE_NAMES = {
    "float": "float32", "float32": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "float64": "float64", "double": "float64", "int32": "int32",
    "int64": "int64", "int8": "int8", "int16": "int16", "uint8": "uint8", "bool": "bool",
    "float8_e4m3": "float8_e4m3", "float8_e5m2": "float8_e5m2", "fp32": "float32",
    "fp16": "float16", "bf16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "int4": "int4", "uint4": "uint4", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "float4_e2m1fn": "float4_e2m1fn", "int2": "int2",
}


#: TileLang's execution backends a kernel table may name (``execution-backend``)
EXECUTION_BACKENDS = ("auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl")


def validate_tables(value: object, where: str) -> dict[str, dict[str, object]]:
    """Check ``[tool.laya-tui.kernel-args]``: a message naming the bad key, else the tables."""
    if not isinstance(value, dict):
        raise ValueError(f"{where} kernel-args: expected a table of \"file.py::kernel\" tables")
    for key, table in value.items():
        here = f"{where} kernel-args.\"{key}\""
        if "::" not in key:
            raise ValueError(f"{here}: the key must look like \"path/file.py::kernel\"")
        if not isinstance(table, dict):
            raise ValueError(f"{here}: expected a table of argument = value")
        for reserved in ("dtypes", "targets"):
            items = table.get(reserved)
            if items is not None and (not isinstance(items, list) or not items
                                      or not all(isinstance(i, str) for i in items)):
                raise ValueError(f"{here} {reserved}: expected a list of strings")
        for t in table.get("targets") or []:
            if t not in ("c", "cuda"):
                raise ValueError(f"{here} targets: unknown target {t!r} (known: c, cuda)")
        for d in table.get("dtypes") or []:
            if d not in DTYPE_NAMES:
                raise ValueError(f"{here} dtypes: unknown dtype {d!r}")
        if "dtype-arg" in table and not isinstance(table["dtype-arg"], str):
            raise ValueError(f"{here} dtype-arg: expected the name of the dtype argument")
        backend = table.get("execution-backend")
        if backend is not None and backend not in EXECUTION_BACKENDS:
            raise ValueError(f"{here} execution-backend: unknown backend {backend!r} "
                             f"(known: {', '.join(EXECUTION_BACKENDS)})")
    return value
