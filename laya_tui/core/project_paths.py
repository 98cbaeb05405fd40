"""Where a project's tests import from (stdlib only): pytest's ``pythonpath`` setting."""

from __future__ import annotations

import os


def pythonpath_of(workspace: str) -> list[str]:
    """The existing folders pytest's ``pythonpath`` setting names (``[tool.pytest.ini_options]``
    of ``pyproject.toml``, else ``[pytest]`` of ``pytest.ini``), resolved in ``workspace``."""
    import configparser
    import tomllib

    entries: list[str] = []
    try:
        with open(os.path.join(workspace, "pyproject.toml"), "rb") as f:
            value = tomllib.load(f).get("tool", {}).get("pytest", {}).get(
                "ini_options", {}).get("pythonpath", [])
        entries = [value] if isinstance(value, str) else [str(v) for v in value]
    except (OSError, ValueError, AttributeError):
        pass
    if not entries:
        ini = configparser.ConfigParser()
        try:
            ini.read(os.path.join(workspace, "pytest.ini"), encoding="utf-8")
            entries = ini.get("pytest", "pythonpath", fallback="").split()
        except (configparser.Error, UnicodeDecodeError):
            entries = []
    found = (os.path.realpath(os.path.join(workspace, e)) for e in entries if e.strip())
    return [f for f in found if os.path.isdir(f)]
