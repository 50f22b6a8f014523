"""The numba backend: Numba-jitted versions of the hot ops, under the names of the reference
ops in npbert.ops, one file each beside them (backend.HOT_OPS). `npbert.set_backend("numba")`
puts them in force.

Each has the reference's signature, returns the same values and the same cache record, field
for field (shapes and dtypes too, but LayerNorm's rstd, float64 here: layernorm.py), so either
backend's backward takes either's cache. The
"why" of each choice is in the module docstrings and docs/performance.md. The matmuls stay
BLAS's gemm, called on parts of the rows from npbert's own threads (matmul.py, gemm.py), so
that one set of threads runs the whole step (threads.py).

The compiled kernels are cached on disk under a hash of all kernel sources (jit_cache.py), so
editing any kernel file recompiles everything that may depend on it.
"""
from npbert.kernels.jit_cache import use_source_keyed_cache

use_source_keyed_cache()   # before any @njit(cache=True) below is decorated

from npbert.kernels.adamw import adamw_update  # noqa: E402
from npbert.kernels.attention_core import attention_core_backward, attention_core_forward  # noqa: E402
from npbert.kernels.cross_entropy import cross_entropy_backward, cross_entropy_forward  # noqa: E402
from npbert.kernels.decoder_cross_entropy import (decoder_cross_entropy_backward,  # noqa: E402
                                                  decoder_cross_entropy_forward, decoder_log_softmax_at)
from npbert.kernels.dropout import dropout_backward, dropout_forward, dropout_rows_forward  # noqa: E402
from npbert.kernels.embedding import embedding_backward, embedding_forward  # noqa: E402
from npbert.kernels.gelu import gelu_backward, gelu_forward  # noqa: E402
from npbert.kernels.layernorm import layernorm_backward, layernorm_forward  # noqa: E402
from npbert.kernels.linear import linear_backward, linear_forward  # noqa: E402
from npbert.kernels.linear_gelu import linear_gelu_backward, linear_gelu_forward  # noqa: E402
from npbert.kernels.packed_attention import packed_attention_backward, packed_attention_forward  # noqa: E402
from npbert.kernels.sum_of_squares import sum_of_squares  # noqa: E402
