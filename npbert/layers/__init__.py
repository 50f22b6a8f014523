"""The composite layers: each a forward/backward pair built from the leaf ops, calling the hot
ones through npbert.backend (the switch between the NumPy reference and the Numba kernels).
Their caches are named records of their parts' caches; their forwards record named
intermediates into a trace when given one (npbert/trace.py). The encoder's layers work on
rows (N, H); a layout says which positions of the batch are rows and picks the attention core.

    layout.py       Padded (every position, the mask bias) or Packed (the real tokens): the rows
    embeddings.py   word + token type + position, LayerNorm, dropout
    attention.py    multi-head self-attention: projections around the layout's attention core
    feedforward.py  dense -> GELU -> dense
    encoder_layer.py, encoder.py
    pooler.py, mlm_head.py, nsp_head.py          BertForPreTraining's heads
    classifier.py, question_answering.py         the fine-tuning heads
    scalar_mix.py                                ELMo's weighted sum of layers (feature-based approach)
"""
