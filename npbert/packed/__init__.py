"""BERT on the real tokens only, forward and backward: the training step without the work of
padding (docs/performance.md, "Packed training").

A padded batch (B, T) computes every position, padding included; here the real tokens are
packed into one (N, H) matrix, N = attention_mask.sum(), every op but attention runs on N
rows, attention runs sequence by sequence on its own n x n scores, and the last encoder layer
computes its queries, attention output, feed-forward and LayerNorms only at the rows the heads
read (the masked positions and [CLS]; all rows for a head on every token). Dropout draws what
the padded step draws, so for the same seed both drop the same elements: the losses and
gradients are the padded step's up to float rounding (tests/test_packed.py: float64 1e-12).

    packing.py      where the real tokens of a (B, T) batch sit in the packed arrays
    dropout.py      dropout on packed rows, from the padded step's uniforms
    embeddings.py   the embeddings block on the packed tokens
    encoder.py      self-attention, encoder layer and stack on packed rows; the last layer at the read rows
    bert.py         BertModel packed: embeddings -> encoder -> pooler
    pretraining.py  BertForPreTraining packed: packed_pretraining_forward / packed_pretraining_backward
"""
from npbert.packed.bert import PackedBertCache, packed_bert_backward, packed_bert_forward
from npbert.packed.packing import Packing
from npbert.packed.pretraining import packed_pretraining_backward, packed_pretraining_forward

__all__ = ["PackedBertCache", "Packing", "packed_bert_backward", "packed_bert_forward", "packed_pretraining_backward",
           "packed_pretraining_forward"]
