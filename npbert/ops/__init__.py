"""Reference ops in pure NumPy: each layer a `*_forward(...) -> (out, cache)` and a
`*_backward(dout, cache) -> gradients` pair. One file per layer; docs/layers/ derives each."""
from npbert.ops.adamw import adamw_update
from npbert.ops.attention import (attention_core_backward, attention_core_forward, attention_mask_bias,
                                  merge_heads, self_attention_backward, self_attention_forward, split_heads)
from npbert.ops.cross_entropy import IGNORE_INDEX, cross_entropy_backward, cross_entropy_forward
from npbert.ops.dropout import dropout_backward, dropout_forward
from npbert.ops.embedding import embedding_backward, embedding_forward
from npbert.ops.embeddings import bert_embeddings_backward, bert_embeddings_forward
from npbert.ops.encoder import encoder_backward, encoder_forward, layer_params
from npbert.ops.encoder_layer import encoder_layer_backward, encoder_layer_forward
from npbert.ops.feedforward import feedforward_backward, feedforward_forward
from npbert.ops.gelu import gelu_backward, gelu_forward
from npbert.ops.layernorm import layernorm_backward, layernorm_forward
from npbert.ops.linear import linear_backward, linear_forward
from npbert.ops.linear_gelu import linear_gelu_backward, linear_gelu_forward
from npbert.ops.mlm_head import mlm_head_backward, mlm_head_forward
from npbert.ops.nsp_head import nsp_head_backward, nsp_head_forward
from npbert.ops.pooler import pooler_backward, pooler_forward
from npbert.ops.softmax import softmax_backward, softmax_forward
from npbert.ops.classifier import classifier_backward, classifier_forward
from npbert.ops.mse import mse_backward, mse_forward
from npbert.ops.question_answering import qa_head_backward, qa_head_forward, span_loss_backward, span_loss_forward
