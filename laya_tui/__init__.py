"""laya-tui: explain/fallback diagnostics dashboard for PyTorch ports.

Kept light on purpose: importing ``laya_tui`` never imports torch, tilelang, mlx or
torch_rbln (docs/architecture.md, 'Processes and the one rule').
"""

from laya_tui.api import Context, Param, param, probe
from laya_tui.core.versions import TOOL_VERSION as __version__

__all__ = ["Context", "Param", "__version__", "param", "probe"]
