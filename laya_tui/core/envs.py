"""Environments: the same cells under several worker interpreters (``--env NAME=PYTHON``).

An environment is a name and a Python interpreter (a virtual environment's ``bin/python``,
usually). Every selected cell runs once per environment, in workers started with that
interpreter, and its id carries the name: ``tilelang/rope_kernel[c,bf16,gpu]@old``.
laya-tui itself stays in its own interpreter, and so does discovery: ``params`` callables
are light by the probe API's contract, so the cells do not depend on the environment.

The worker runs *this* laya-tui (``PYTHONPATH`` names a folder that holds only a link to
this ``laya_tui`` package), so the other interpreter needs the libraries the probes use and
nothing of laya-tui's: the worker side (``laya_tui.worker``, ``laya_tui.api``, the
discovery-time family code) imports only the standard library (tested), on Python
>= :data:`MIN_PYTHON` (laya-tui's ``requires-python``). A venv interpreter is started like
an activated venv: its ``bin`` folder first on ``PATH``, ``VIRTUAL_ENV`` set.

:func:`inspect_env` checks an interpreter before anything runs (one clear
:class:`UsageError`, with the line that fixes it) and reads its versions in the same
process start. Standard library only (docs/architecture.md, 'Processes and the one rule').
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from laya_tui.core.cellid import with_env
from laya_tui.core.errors import UsageError
from laya_tui.core.report_types import CellSpec, CompilerDict, EnvInfoDict

if TYPE_CHECKING:
    from laya_tui.core.cache import CacheVersions

#: The oldest Python a worker runs on (laya-tui's ``requires-python``).
MIN_PYTHON = (3, 11)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$")
#: Compilers whose versions each environment records (found on the worker's PATH).
COMPILERS = ("cc", "c++", "nvcc")
#: Distributions recorded per environment (laya-tui's own and textual are not the worker's).
ENV_LIBRARIES = ("torch", "transformers", "tilelang", "mlx", "torch-rbln", "numpy",
                 "apache-tvm-ffi")
INSPECT_TIMEOUT = 60.0


def recipe(python: str, want: str = "3.11") -> str:
    """The line a broken environment's message ends with: how to make one that works."""
    root = os.path.dirname(os.path.dirname(python))
    if os.path.basename(os.path.dirname(python)) != "bin" or root in ("", "/", "/usr"):
        root = "DIR"
    else:
        rel = os.path.relpath(root)
        root = rel if not rel.startswith("..") else root
    return (f"create it with: python{want} -m venv {root} && {root}/bin/pip install "
            "torch==2.13.0 tilelang==0.1.14 (the libraries your probes use; laya-tui's "
            "worker needs only the standard library)")



@dataclass(frozen=True)
class Environment:
    """One named worker interpreter and what :func:`inspect_env` found in it."""

    name: str
    python: str  # the interpreter as started (absolute, symlinks kept: a venv's own)
    python_version: str = ""
    executable: str = ""  # ``sys.executable`` inside it
    versions: Mapping[str, str | None] = field(default_factory=dict)
    compilers: Mapping[str, CompilerDict | None] = field(default_factory=dict)

    def info(self) -> EnvInfoDict:
        """The report's ``envs.<name>`` object."""
        return {"python": self.python, "executable": self.executable or self.python,
                "versions": dict(self.versions), "compilers": dict(self.compilers)}

    def cache_versions(self) -> CacheVersions:
        """What the result cache keys an environment's cells on."""
        return {"env": self.name, "python": self.python, **dict(self.versions),
                "compilers": dict(self.compilers)}


# -- ids and keys ------------------------------------------------------------------------------

def cell_id(base: str, env: str | None) -> str:
    """``family/name[param]@env`` (the base id when ``env`` is None; ``core/cellid.py``)."""
    return with_env(base, env)


def base_id(probe: Mapping[str, object]) -> str:
    """A cell's id without its ``@env`` (a result or discovery entry with an ``env``)."""
    pid, env = str(probe.get("id", "")), probe.get("env")
    if env and pid.endswith("@" + str(env)):
        return pid[: -len(str(env)) - 1]
    return pid


def worker_key(probe: Mapping[str, object]) -> str:
    """Which warm worker runs a cell: its family, ``family@env`` under an environment."""
    fam, env = str(probe.get("family", "")), probe.get("env")
    return f"{fam}@{env}" if env else fam


def expand(probes: Iterable[CellSpec], envs: Iterable[Environment]) -> list[CellSpec]:
    """Every discovered cell once per environment, environment by environment."""
    cells = list(probes)
    return [{**p, "id": cell_id(p["id"], e.name), "env": e.name} for e in envs for p in cells]


# -- parsing -------------------------------------------------------------------------------------

def check_name(name: str, where: str) -> str:
    """A valid environment name, or a UsageError."""
    if not NAME_RE.match(name):
        raise UsageError(f"{where}: environment name {name!r} must be letters, digits, "
                         "'.', '_', '+' or '-' (at most 40, starting with a letter or digit)")
    return name


def resolve_python(python: str, base: str) -> str:
    """An absolute interpreter path: a bare command is looked up on PATH, a relative path
    is relative to ``base``; symlinks are kept (a venv's python is one)."""
    python = os.path.expanduser(python)
    if os.sep not in python:
        found = shutil.which(python)
        if found:
            return found
    return os.path.normpath(os.path.join(base, python))


def parse_env_flags(values: Iterable[str], base: str) -> list[tuple[str, str]]:
    """``["old=.venv-014/bin/python", ...]`` -> ``[(name, absolute python), ...]``."""
    out: list[tuple[str, str]] = []
    for value in values:
        name, sep, python = str(value).partition("=")
        name, python = name.strip(), python.strip()
        if not sep or not name or not python:
            raise UsageError(f"--env expects NAME=PYTHON (e.g. old=.venv-014/bin/python), "
                             f"got {value!r}")
        out.append((check_name(name, "--env"), resolve_python(python, base)))
    return _unique(out, "--env")


def parse_env_table(value: object, base: str, where: str) -> list[tuple[str, str]]:
    """``envs = { old = ".venv-014/bin/python", new = ".venv/bin/python" }`` (relative to
    the workspace), in the table's order."""
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{where} envs: expected a table of name = \"path/to/python\", "
                         f"got {value!r}")
    out = []
    for name, python in value.items():
        if not isinstance(python, str) or not python:
            raise UsageError(f"{where} envs.{name}: expected a path to a Python interpreter, "
                             f"got {python!r}")
        out.append((check_name(str(name), f"{where} envs"), resolve_python(python, base)))
    return _unique(out, f"{where} envs")


def _unique(pairs: list[tuple[str, str]], where: str) -> list[tuple[str, str]]:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise UsageError(f"{where}: environment {name!r} is given twice")
        seen.add(name)
    return pairs


# -- starting a worker in an environment ------------------------------------------------------

def package_dir() -> str:
    """This ``laya_tui`` package folder (what an environment's worker imports)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def link_package(folder: str) -> str:
    """Make ``folder/laya_tui`` a link to this package and return ``folder``: a PYTHONPATH
    entry that adds laya_tui and nothing else (not the repo's ``kernels``/``probes``, not
    laya-tui's own site-packages)."""
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "laya_tui")
    if os.path.realpath(link) != os.path.realpath(package_dir()):
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(package_dir(), link)
    return folder


def worker_environ(base: Mapping[str, str], python: str, path_entry: str) -> dict[str, str]:
    """The process environment of a worker started with ``python``: ``path_entry``
    (:func:`link_package`) first on PYTHONPATH; a venv's ``bin`` first on PATH and
    ``VIRTUAL_ENV`` set, as its ``activate`` does."""
    env = dict(base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path_entry, env.get("PYTHONPATH")) if p)
    bindir = os.path.dirname(python)
    root = os.path.dirname(bindir)
    if os.path.isfile(os.path.join(root, "pyvenv.cfg")):
        env["VIRTUAL_ENV"] = root
        parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir]
        env["PATH"] = os.pathsep.join([bindir, *parts])
    env.pop("PYTHONHOME", None)
    return env


# -- checking an interpreter ---------------------------------------------------------------------

# Runs in the environment's interpreter. The first lines are valid Python 2 and 3, so an old
# interpreter still says which version it is; the rest needs MIN_PYTHON.
_REST = r'''
import json, os, shutil, subprocess, traceback
from importlib import metadata
out = {"executable": sys.executable, "versions": {}, "compilers": {}}
try:
    import laya_tui.worker.main, laya_tui.worker.loader, laya_tui.worker.deps, laya_tui.api
except BaseException as exc:
    out["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
for name in LIBS:
    try:
        out["versions"][name] = metadata.version(name)
    except Exception:
        out["versions"][name] = None
for tool in COMPILERS:
    path = shutil.which(tool)
    line = None
    if path:
        try:
            p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
            lines = [ln.strip() for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
            pick = [ln for ln in lines if "release" in ln.lower() or "version" in ln.lower()]
            line = (pick[-1] if pick else (lines[0] if lines else ""))
        except Exception as exc:
            line = "unusable: %s" % exc
    out["compilers"][tool] = {"path": path, "version": line} if path else None
sys.stdout.write("LAYA-ENV " + json.dumps(out) + "\n")
'''


def _script() -> str:
    rest = _REST.replace("LIBS", repr(ENV_LIBRARIES)).replace("COMPILERS", repr(COMPILERS))
    return ("import sys\n"
            "sys.stdout.write('LAYA-PY %d.%d.%d\\n' % tuple(sys.version_info[:3]))\n"
            f"if sys.version_info >= {MIN_PYTHON!r}:\n"
            f"    exec({rest!r})\n")


def inspect_env(name: str, python: str, *, timeout: float = INSPECT_TIMEOUT) -> Environment:
    """Check that ``python`` can run a laya-tui worker and read its versions; anything else
    is one UsageError that says what is wrong and how to fix it."""
    import subprocess

    where = f"environment {name} ({python})"
    if not os.path.exists(python):
        raise UsageError(f"{where}: no such interpreter; {recipe(python)}")
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        raise UsageError(f"{where}: not an executable interpreter; {recipe(python)}")
    with tempfile.TemporaryDirectory(prefix="laya-tui-env-") as tmp:
        env = worker_environ(os.environ, python, link_package(tmp))
        try:
            proc = subprocess.run([python, "-c", _script()], capture_output=True, text=True,
                                  timeout=timeout, env=env, stdin=subprocess.DEVNULL,
                                  cwd=tmp)
        except subprocess.TimeoutExpired:
            raise UsageError(f"{where}: did not answer within {timeout:g} s") from None
        except OSError as exc:
            raise UsageError(f"{where}: cannot start it ({exc.strerror or exc}); "
                             f"{recipe(python)}") from None
    lines = proc.stdout.splitlines()
    head = next((ln for ln in lines if ln.startswith("LAYA-PY ")), None)
    if head is None:
        said = " ".join((proc.stderr or proc.stdout).split())[:200] or "nothing"
        raise UsageError(f"{where}: is not a Python interpreter (it said: {said}); "
                         f"{recipe(python)}")
    version = head.split()[1]
    if tuple(int(x) for x in version.split(".")[:2]) < MIN_PYTHON:
        want = ".".join(map(str, MIN_PYTHON))
        raise UsageError(f"{where}: is Python {version}; a laya-tui worker needs Python >= "
                         f"{want}: {recipe(python, want)}")
    body = next((ln for ln in lines if ln.startswith("LAYA-ENV ")), None)
    if body is None:
        said = " ".join(proc.stderr.split())[-300:] or f"exit code {proc.returncode}"
        raise UsageError(f"{where}: Python {version} could not run laya-tui's check ({said})")
    data = json.loads(body[len("LAYA-ENV "):])
    if data.get("error"):
        raise UsageError(f"{where}: Python {version} cannot import laya-tui's worker "
                         f"({data['error']}); the worker needs only the standard library: "
                         f"use an interpreter with a complete standard library; "
                         f"{recipe(python)}")
    return Environment(name=name, python=python, python_version=version,
                       executable=str(data.get("executable") or python),
                       versions={"python": version, **data.get("versions", {})},
                       compilers=data.get("compilers", {}))


def inspect_envs(pairs: Iterable[tuple[str, str]]) -> tuple[Environment, ...]:
    """:func:`inspect_env` for each ``(name, python)``, in order."""
    return tuple(inspect_env(name, python) for name, python in pairs)
