"""The model's numbers: ops, layers, heads and the whole model forward and backward (finite differences,
Hugging Face, the trace, the packed layout and inference) on the NumPy reference (npbert/ops,
npbert/layers, npbert/heads, npbert/model.py, npbert/inference.py)."""
