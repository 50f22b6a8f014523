"""Self-attention over packed sequences (npbert/ops/packed_attention.py's semantics).
For now the reference itself; a fused kernel replaces it."""
from npbert.ops.packed_attention import packed_attention_backward, packed_attention_forward  # noqa: F401
