"""Checkpoints on disk (npbert/checkpoint.py, npbert/safetensors.py): saving and loading, Hugging Face's
naming, and damaged files and configs."""
