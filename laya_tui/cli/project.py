"""The user's project as laya-tui sees it: built-in probe families, the demo, and what to
say when nothing is configured (standard library only: the CLI imports this).

The built-in probe files (``env``, ``explain``, ``tilelang``, ``aoti``, ``mlx``) and the demo
kernels live in the repository's top-level ``probes/`` and ``kernels/`` folders. A wheel
ships them inside the package as ``laya_tui/builtin_probes`` and ``laya_tui/demo_kernels``
(see ``setup.py``); a source checkout (``PYTHONPATH=<repo>`` or an editable install) has
them beside the package. :func:`builtin_probes_dir` and :func:`demo_kernels_dir` find either.
"""

from __future__ import annotations

import os

from laya_tui.core.errors import UsageError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Installed name (inside the package) -> the source checkout's folder (beside it).
_LAYOUT = {"builtin_probes": "probes", "demo_kernels": "kernels"}


def _shipped(name: str) -> str:
    """``laya_tui/<name>`` in a wheel, else ``<repo>/<source folder>`` in a checkout."""
    inside = os.path.join(_PACKAGE, name)
    if os.path.isdir(inside):
        return inside
    beside = os.path.join(os.path.dirname(_PACKAGE), _LAYOUT[name])
    if os.path.isdir(beside) and os.path.isfile(os.path.join(os.path.dirname(_PACKAGE),
                                                             "pyproject.toml")):
        return beside
    raise FileNotFoundError(f"laya-tui is incomplete: neither {inside} nor {beside} exists "
                            "(reinstall it: pip install --force-reinstall laya-tui)")


def builtin_probes_dir() -> str:
    """The folder of the built-in probe files."""
    return _shipped("builtin_probes")


def demo_kernels_dir() -> str:
    """The folder of the five demo TileLang kernels (a package: relative imports)."""
    return _shipped("demo_kernels")


def unique_paths(paths: list[str]) -> list[str]:
    """Absolute paths, first occurrence kept (two spellings of one folder count once)."""
    seen: set[str] = set()
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            out.append(os.path.abspath(p))
    return out


TABLE_EXAMPLE = """\
[tool.laya-tui]
models = ["mypkg.models:build"]  # returns (model, inputs)
kernels = ["kernels"]            # TileLang kernel folders
# demo = true                    # the built-in demo too
"""


def nothing_configured_hint(workspace: str, *, table: bool = False) -> str:
    """What to configure in a project that names no model, kernel, probe or demo;
    ``table``: its pyproject.toml has a ``[tool.laya-tui]`` table (naming none of them)."""
    example = "".join("    " + line + "\n" for line in TABLE_EXAMPLE.splitlines())
    if table:
        why = ("(its [tool.laya-tui] table names no model, kernel folder, probe folder\n"
               "or demo, and there is no probes/ or kernels/ folder).\n\n"
               "Say what to examine in that table, for example:\n\n")
    else:
        why = ("(no model, no kernel folder, no probes/ folder, no [tool.laya-tui] table).\n\n"
               "Say what to examine in its pyproject.toml\n"
               "(`laya-tui init` writes this table, commented):\n\n")
    return (
        f"laya-tui: nothing to examine in {workspace}\n{why}{example}\n"
        "or pass --model MODULE:CALLABLE or --kernels DIR,\n"
        "put @probe files in probes/, or try the built-in demo with --demo.\n"
    )


class NothingConfigured(UsageError):
    """The project names nothing to examine; the message is :func:`nothing_configured_hint`."""


#: top-level files of a kernel folder that are never kernel files (as the TileLang family's
#: discovery skips them, with ``_private.py`` and dot files)
_NOT_KERNEL_FILES = frozenset({"__init__.py", "setup.py", "conftest.py"})


def _candidate_files(path: str) -> list[str]:
    """The ``*.py`` files a kernel path offers: itself, or a folder's top-level ones."""
    if os.path.isfile(path):
        return [path] if path.endswith(".py") else []
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [os.path.join(path, n) for n in names
            if n.endswith(".py") and not n.startswith(("_", ".")) and n not in _NOT_KERNEL_FILES
            and os.path.isfile(os.path.join(path, n))]


def is_kernel_file(path: str) -> bool:
    """A readable Python text file that uses TileLang or defines a kernel factory (binary
    junk, an undecodable or empty file is not)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "\0" in text or not text.strip():
        return False
    # (a kernel needs TileLang's language, so its file names it; the family's discovery is
    # worker side: the front end does not import it)
    return "tilelang" in text or "prim_func" in text


def has_kernel_file(path: str) -> bool:
    """True when the kernel folder (or file) holds at least one kernel file."""
    return any(is_kernel_file(f) for f in _candidate_files(path))


def no_kernel_file_message(path: str) -> str:
    """The one line for a ``--kernels`` / ``kernels =`` path with no kernel file in it."""
    if os.path.isfile(path):
        return (f"laya-tui: nothing to examine in {path}: not a kernel file (a readable "
                "Python text file using TileLang)\n")
    return (f"laya-tui: nothing to examine in kernels folder {path}: no kernel file found (a "
            "top-level *.py file using TileLang; _*.py, __init__.py, setup.py and "
            "conftest.py are skipped)\n")


def _default_dir(workspace: str, name: str) -> list[str]:
    path = os.path.join(workspace, name)
    return [path] if os.path.isdir(path) else []


def table_present(workspace: str) -> bool:
    """True when the workspace's pyproject.toml has a ``[tool.laya-tui]`` table (even empty)."""
    path = os.path.join(workspace, "pyproject.toml")
    if not os.path.isfile(path):
        return False
    import tomllib  # with datetime & co: only when a pyproject is read, not for --help

    try:
        with open(path, "rb") as fh:
            tool = tomllib.load(fh).get("tool")
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(tool, dict) and "laya-tui" in tool


def resolve_sources(workspace: str, *, own: list[str] | None, kernels: list[str] | None,
                    models: list[str], demo: bool,
                    flags: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """The probe paths and kernel folders of a run, from settings already merged with the
    table (``own``/``kernels``: the flag's list, else the table's, else ``None``).

    ``flags`` names the settings given on the command line (``"kernels"``, ``"demo"``).
    Own probes are ``--probes``, else the table's ``probes``, else ``<workspace>/probes``;
    kernels likewise with ``<workspace>/kernels``. The built-in families join them whenever
    they have something to examine (a model, a kernel folder, the demo) or the project has
    no probes of its own. The demo adds the demo kernels: always with ``--demo``; with the
    table's ``demo = true`` unless ``--kernels`` replaces the table's kernel list. A project
    with none of these raises :class:`NothingConfigured`, with a ``[tool.laya-tui]`` table
    (``laya-tui init``'s, all commented) or without: the built-in env probes alone are
    nothing to examine, and such a run must not pass.
    """
    own = list(own) if own else _default_dir(workspace, "probes")
    for p in own:
        if not os.path.exists(p):
            raise UsageError(f"probe path does not exist: {p}")
    named = bool(kernels)
    kernels = list(kernels) if kernels else _default_dir(workspace, "kernels")
    for k in kernels:  # a folder of kernel files, or one kernel file
        if os.path.isfile(k) and not k.endswith(".py"):
            raise UsageError(f"kernel path is not a folder or a .py file: {k}")
        if not os.path.exists(k):
            raise UsageError(f"kernel folder does not exist: {k}")
    if named:  # --kernels / kernels = naming a folder without kernels: a moved folder
        for k in kernels:
            if not has_kernel_file(k):
                raise NothingConfigured(no_kernel_file_message(k))
    # ./kernels without a kernel file (helpers a model imports) is kept, but it is no subject
    examined = named or any(has_kernel_file(k) for k in kernels)
    if demo and ("demo" in flags or "kernels" not in flags):
        kernels.append(demo_kernels_dir())
    subjects = bool((kernels and examined) or models or demo)
    if not (subjects or own):  # a table naming nothing is no configuration either
        raise NothingConfigured(nothing_configured_hint(workspace,
                                                        table=table_present(workspace)))
    builtin = [builtin_probes_dir()] if kernels or subjects or not own else []
    return unique_paths(builtin + own), unique_paths(kernels)
