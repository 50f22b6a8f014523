"""The numba backend: Numba-jitted versions of the hot ops, under the names of the reference
ops in npbert.ops, one file each beside them (backend.HOT_OPS). `npbert.set_backend("numba")`
puts them in force.

Each has the reference's signature, returns the same values and the same cache record
(tagged "numba"; a few fields differ in layout, e.g. LayerNorm's rstd is (N,) float64). The
"why" of each choice is in the module docstrings and docs/performance.md. The linear layers
have no kernel: the reference already makes one 2-D BLAS call per matmul, which is what a
kernel would do (docs/performance.md, "the matmul choice"), so both backends share it.

The compiled kernels are cached on disk under a hash of all kernel sources (jit_cache.py), so
editing any kernel file recompiles everything that may depend on it.
"""
from npbert.kernels.jit_cache import use_source_keyed_cache

use_source_keyed_cache()   # before any @njit(cache=True) below is decorated

from npbert.kernels.adamw import adamw_update  # noqa: E402
from npbert.kernels.attention_core import attention_core_backward, attention_core_forward  # noqa: E402
from npbert.kernels.cross_entropy import cross_entropy_backward, cross_entropy_forward  # noqa: E402
from npbert.kernels.dropout import dropout_backward, dropout_forward  # noqa: E402
from npbert.kernels.embedding import embedding_backward, embedding_forward  # noqa: E402
from npbert.kernels.gelu import gelu_backward, gelu_forward  # noqa: E402
from npbert.kernels.layernorm import layernorm_backward, layernorm_forward  # noqa: E402
from npbert.kernels.linear_gelu import linear_gelu_backward, linear_gelu_forward  # noqa: E402

# hot ops this backend leaves to the reference on purpose (see above)
SHARED_WITH_REFERENCE = ("linear_forward", "linear_backward")
