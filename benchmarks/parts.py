"""Where a training step's time goes: wrappers that time the layer calls, for the benchmark only.

Two views, each installed by patching module attributes for the duration of a `with` block:
- parts: embeddings, attention, FFN, the rest of each encoder layer (residual adds,
  LayerNorm, dropout), heads (pooler, MLM, NSP, cross-entropy), optimizer, other;
- ops: every hot op of the backend in force (linear_forward, attention_core_backward, ...).
Times are exclusive: a wrapped call nested in another is subtracted from its parent.
"""
from __future__ import annotations

import contextlib
import time
from collections import defaultdict

import npbert.model as model
import npbert.layers.encoder as encoder
import npbert.layers.encoder_layer as encoder_layer
from npbert import backend, optim

PARTS = {  # part -> (module, function names)
    "embeddings": (model, ("bert_embeddings_forward", "bert_embeddings_backward")),
    "attention": (encoder_layer, ("self_attention_forward", "self_attention_backward")),
    "ffn": (encoder_layer, ("feedforward_forward", "feedforward_backward")),
    "layer_norm_dropout_residual": (encoder, ("encoder_layer_forward", "encoder_layer_backward")),
    "heads": (model, ("pooler_forward", "pooler_backward", "mlm_head_forward", "mlm_head_backward",
                      "nsp_head_forward", "nsp_head_backward")),
}


class Timer:
    def __init__(self):
        self.seconds = defaultdict(float)              # name -> exclusive seconds
        self._children = []                            # stack: time spent in nested wrapped calls

    def wrap(self, name, f):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            self._children.append(0.0)
            try:
                return f(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                self.seconds[name] += dt - self._children.pop()
                if self._children:
                    self._children[-1] += dt
        return timed

    @contextlib.contextmanager
    def patched(self, patches):
        """patches: (module or object, attribute, name) triples; restores the originals on exit."""
        saved = []
        for obj, attr, name in patches:
            saved.append((obj, attr, getattr(obj, attr)))
            setattr(obj, attr, self.wrap(name, getattr(obj, attr)))
        try:
            yield self
        finally:
            for obj, attr, original in reversed(saved):
                setattr(obj, attr, original)


def parts_view(timer: Timer, opt):
    patches = [(mod, fn, part) for part, (mod, fns) in PARTS.items() for fn in fns]
    patches += [(optim, "clip_by_global_norm", "optimizer"), (opt, "step", "optimizer")]
    patches += [(backend, op, "heads") for op in ("cross_entropy_forward", "cross_entropy_backward")]
    return timer.patched(patches)


def ops_view(timer: Timer):
    return timer.patched([(backend, op, op) for op in backend.HOT_OPS])   # the layers call backend.<op>
