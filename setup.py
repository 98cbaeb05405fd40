"""Package layout that pyproject.toml cannot express alone: every ``laya_tui`` subpackage by
discovery, plus the repository's ``probes/`` and ``kernels/`` folders shipped *inside* the
package as ``laya_tui.builtin_probes`` and ``laya_tui.demo_kernels`` (never as top-level
``probes``/``kernels`` packages). ``laya_tui/cli/project.py`` finds them in both layouts.
"""

from setuptools import find_packages, setup

MAPPED = {"laya_tui.builtin_probes": "probes", "laya_tui.demo_kernels": "kernels"}

setup(
    packages=find_packages(include=["laya_tui", "laya_tui.*"]) + sorted(MAPPED),
    package_dir=MAPPED,
)
