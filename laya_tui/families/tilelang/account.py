"""The ``stem[file]`` cell of a kernel-folder file in which reading finds no kernel
(worker side): it says why the file has no kernel cells, so no file is dropped silently.

No TileLang import, or a file that does not parse: skipped with that reason, without
running it. Otherwise the file's own run is tried (:mod:`laya_tui.families.tilelang.capture`):
it does not import -> could not be examined (status ``error``: what the file's own
``python file.py`` would raise); it builds nothing -> skipped ("builds no kernel when run");
it builds only kernels other files define (a file using a library module) -> skipped, those
files' cells examine them; it builds kernels laya-tui has no cell for -> could not be
examined, naming them and where they were built.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.cell_state import INSTALL_HINT, has_gpu
from laya_tui.families.tilelang.missing_package import missing_package, unexamined_reason
from laya_tui.families.tilelang.records import ProbeContext

if TYPE_CHECKING:
    from laya_tui.families.tilelang.tl_objects import PrimFunc


def account_file(ctx: ProbeContext, file: str, note: str | None) -> None:
    """End the cell with why ``file`` has no kernel cells (``ctx.skip``/``ctx.error``)."""
    base = os.path.basename(file)
    ctx.depends_on(file)
    if note is not None:
        ctx.skip(f"{base} {note}")
    try:
        import tilelang  # noqa: F401
    except ImportError as exc:
        ctx.skip(f"tilelang is not importable ({exc}): {INSTALL_HINT}")
    from laya_tui.families.tilelang.capture import capture_file

    cap = capture_file(file)
    gpu = cap.gpu_needed if not has_gpu() else None
    if cap.error and not cap.builds:
        if gpu:
            ctx.skip(f"{base} needs a GPU to be imported, so it is examined on a GPU host: "
                     f"{gpu}")
        top = missing_package(cap.error, file)
        if top is not None:
            ctx.error(unexamined_reason(f"{base}'s kernels", file, top, cap.error))
        from laya_tui.families.tilelang.moved_names import moved_hint

        moved = moved_hint(cap.error, file)
        ctx.error(f"{base} does not import, so its kernels cannot be found: {cap.error}"
                  + (f" ({moved})" if moved else ""))
    names: dict[str, str] = {}
    for b in cap.builds:
        names.setdefault(b.obj or _symbol(b.func), b.site or b.entry)
    for name, failure in cap.failures.items():
        names.setdefault(name, failure.site or "its run")
    if not names:
        if gpu:
            ctx.skip(f"{base} imports TileLang; its run needs a GPU before it builds a "
                     f"kernel, so it is examined on a GPU host: {gpu}")
        ctx.skip(f"{base} imports TileLang but defines no kernel laya-tui can find and builds "
                 f"none when run ({cap.how_it_ended()})")
    foreign = {n: s for n, s in names.items() if "::" in n}
    if len(foreign) == len(names):
        homes = sorted({os.path.basename(n.split("::")[0]) for n in foreign})
        ctx.skip(f"{base} builds only kernels other files define, examined in their own "
                 f"cells ({', '.join(homes)})")
    own = ", ".join(f"{n} ({s})" for n, s in names.items() if n not in foreign)
    ctx.error(f"{base}'s run builds {own}, but reading the file finds no definition to give "
              f"it a cell (a PrimFunc made outside this file's functions and classes): "
              f"name it in [tool.laya-tui.kernel-args] or define it in a function of the file")


def _symbol(func: PrimFunc) -> str:
    try:
        return str(func.attrs["global_symbol"])
    except Exception:  # noqa: BLE001
        return "a kernel"
