"""Front ends: the ``laya-tui`` entry point, settings from flags and ``[tool.laya-tui]``,
the headless run and the dashboard launcher."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """The ``laya-tui`` command (imports the front ends only when called)."""
    from laya_tui.cli.main import main as run

    return run(argv)
