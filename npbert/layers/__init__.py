"""The composite layers: each a forward/backward pair built from the leaf ops, calling the hot
ones through npbert.backend (the switch between the NumPy reference and the Numba kernels).
Their caches are named records of their parts' caches; their forwards record named
intermediates into a trace when given one (npbert/trace.py).

    embeddings.py   word + position + token type, LayerNorm, dropout
    attention.py    multi-head self-attention: projections around the attention core
    feedforward.py  dense -> GELU -> dense
    encoder_layer.py, encoder.py
    pooler.py, mlm_head.py, nsp_head.py          BertForPreTraining's heads
    classifier.py, question_answering.py         the fine-tuning heads
    scalar_mix.py                                ELMo's weighted sum of layers (feature-based approach)
"""
