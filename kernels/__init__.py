"""TileLang kernels of a ModernBERT-style encoder (DESIGN §4).

Each module holds one factory (GPU specialization by default, ``cpu=True`` for the fp32
CPU specialization) and an ``example()`` the lowering-matrix probe runs. Importing this
package imports TileLang: do it only in workers and tests.
"""

from .add_ln import add_ln_kernel
from .attn import attn_kernel
from .common import Example, Spec, compile_cpu, make_spec
from .geglu import gemm_geglu_kernel
from .gemm import gemm_kernel
from .rope import rope_kernel

__all__ = [
    "Example",
    "Spec",
    "add_ln_kernel",
    "attn_kernel",
    "compile_cpu",
    "gemm_geglu_kernel",
    "gemm_kernel",
    "make_spec",
    "rope_kernel",
]
