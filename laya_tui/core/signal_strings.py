"""One copy of the strings ``json.loads`` repeats in every signal of a worker's batch: the
probe id, the kind and the call-site file (a quarter of a signal's memory at 100,000
signals). Standard library only.
"""

from __future__ import annotations

from laya_tui.core.report_types import SignalDict
from laya_tui.core.signals import KINDS

__all__ = ["FILES_SHARED", "share_strings"]

_KINDS = {k: k for k in KINDS}
#: At most this many distinct call-site files are shared per run (one dict per run).
FILES_SHARED = 4096


def share_strings(batch: list[SignalDict], pid: str, files: dict[str, str]) -> None:
    """Make the signals of ``batch`` (from the run of ``pid``) share one string per probe
    id, kind and call-site file, in place; ``files`` holds the run's shared file names."""
    for sig in batch:
        if sig.get("probe") == pid:
            sig["probe"] = pid
        kind = _KINDS.get(sig.get("kind"))
        if kind is not None:
            sig["kind"] = kind
        site = sig.get("site")
        if type(site) is dict and type(site.get("file")) is str:
            shared = files.get(site["file"])
            if shared is None and len(files) < FILES_SHARED:
                shared = files[site["file"]] = site["file"]
            if shared is not None:
                site["file"] = shared
