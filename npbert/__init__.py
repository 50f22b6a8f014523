"""npbert: BERT in NumPy, every backward pass written by hand.

The names below are imported on first use, so `import npbert.cli` can set thread counts
before NumPy is loaded (see npbert/cli.py).
"""
import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "npbert.backend": ("get_backend", "set_backend"),
    "npbert.checkpoint": ("load_pretrained", "save_pretrained"),
    "npbert.config": ("PRESETS", "BertConfig"),
    "npbert.errors": ("CheckpointError", "DataError", "InputError", "NpbertError"),
    "npbert.model": ("bert_backward", "bert_forward", "pretraining_backward", "pretraining_forward"),
    "npbert.model_params": ("count_params", "init_params", "param_shapes"),
    "npbert.inference": ("bert_inference", "masked_lm_inference", "masked_lm_log_probs", "pretraining_inference",
                         "task_inference"),
    "npbert.tokenizer": ("BasicTokenizer", "BertTokenizer"),
    "npbert.tokenizer.trainer": ("train_wordpiece_vocab",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'npbert' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
