"""The leaf ops in pure NumPy: each a `*_forward(...) -> (out, cache)` and a
`*_backward(dout, cache) -> gradients` pair over plain arrays, its cache a named record. They
import nothing of npbert above them (the composite layers that combine them are in
npbert/layers/). One file per op; docs/layers/ derives each backward.

These are the readable reference: npbert/kernels/ has Numba versions of the hot ones with the
same signatures and cache records, and npbert/backend.py chooses between the two.
"""
from npbert.ops.adamw import adamw_update
from npbert.ops.attention_core import (AttentionCoreCache, attention_core_backward, attention_core_forward,
                                       attention_mask_bias, attention_scores, merge_heads, score_grads,
                                       split_heads)
from npbert.ops.cross_entropy import IGNORE_INDEX, CrossEntropyCache, cross_entropy_backward, cross_entropy_forward
from npbert.ops.decoder_cross_entropy import (DecoderCrossEntropyCache, decoder_cross_entropy_backward,
                                              decoder_cross_entropy_forward, decoder_log_softmax_at, decoder_top_k,
                                              log_softmax_at)
from npbert.ops.dropout import (DropoutCache, DropoutStream, dropout_backward, dropout_forward, dropout_key,
                                dropout_rows_forward, dropout_uniforms)
from npbert.ops.embedding import EmbeddingCache, embedding_backward, embedding_forward
from npbert.ops.gelu import GeluCache, gelu_backward, gelu_forward
from npbert.ops.layernorm import LayerNormCache, layernorm_backward, layernorm_forward
from npbert.ops.linear import LinearCache, linear_backward, linear_forward
from npbert.ops.linear_gelu import LinearGeluCache, linear_gelu_backward, linear_gelu_forward, pre_activation_grad
from npbert.ops.packed_attention import packed_attention_backward, packed_attention_forward
from npbert.ops.mse import MseCache, mse_backward, mse_forward
from npbert.ops.sum_of_squares import sum_of_squares
from npbert.ops.softmax import SoftmaxCache, softmax_backward, softmax_forward

__all__ = ["AttentionCoreCache", "CrossEntropyCache", "DecoderCrossEntropyCache", "decoder_cross_entropy_backward",
           "decoder_cross_entropy_forward", "decoder_log_softmax_at", "decoder_top_k", "log_softmax_at", "DropoutCache", "EmbeddingCache", "GeluCache", "IGNORE_INDEX",
           "LayerNormCache", "LinearCache", "LinearGeluCache", "MseCache", "SoftmaxCache", "adamw_update",
           "attention_core_backward", "attention_core_forward", "attention_mask_bias", "attention_scores",
           "merge_heads", "packed_attention_backward", "packed_attention_forward", "score_grads", "split_heads",
           "cross_entropy_backward", "cross_entropy_forward", "dropout_backward", "dropout_forward", "dropout_uniforms",
           "DropoutStream", "dropout_key", "dropout_rows_forward",
           "embedding_backward", "embedding_forward", "gelu_backward", "gelu_forward", "layernorm_backward",
           "layernorm_forward", "linear_backward", "linear_forward", "linear_gelu_backward", "linear_gelu_forward",
           "mse_backward", "mse_forward", "pre_activation_grad", "softmax_backward", "softmax_forward", "sum_of_squares"]
