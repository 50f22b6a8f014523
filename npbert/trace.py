"""A trace: every named intermediate of a forward, and the gradient of the loss with respect to
each in the backward, recorded by a stable dotted name.

    from npbert.trace import Trace
    trace = Trace()
    out, cache = pretraining_forward(params, config, input_ids, ..., trace=trace)
    grads = pretraining_backward(cache)                  # the backward records into it too
    trace["bert.encoder.layer.0.attention.self.probs"]  # (B, A, T, T), as made by the forward
    trace.grad("bert.encoder.layer.0")                   # d loss / d (layer 0's output)

Names are Hugging Face's module paths, so that a port compares them with the outputs of
forward hooks on the same modules (`output_hidden_states`, `output_attentions`): a module's
output is recorded under its path (under the outermost module that outputs it), and a
quantity inside a module under its path plus the derivation's symbol (`...self.scores`,
`...self.probs`, `bert.embeddings.sum`). docs/model.md lists every name with its shape.

The model's forwards take `trace=None` and the layers `trace=NO_TRACE`, whose methods do
nothing: a forward that is not traced pays one call that returns at once per name. A traced
forward keeps copies, so later in-place work cannot change what was recorded.
"""
from __future__ import annotations

import numpy as np


class Trace:
    active = True                                       # NO_TRACE's is False: work only a trace needs is skipped

    def __init__(self):
        self.forward: dict[str, np.ndarray] = {}         # name -> value, in the order the forward made them
        self.backward: dict[str, np.ndarray] = {}        # name -> d loss / d value, in the order of the backward
        self._prefix = ""

    def scope(self, name: str) -> "Trace":
        """A view of this trace whose names start with `name.` (what a layer records as "probs"
        inside scope "bert.encoder.layer.0.attention.self" is that layer's probs)."""
        view = Trace.__new__(Trace)
        view.forward, view.backward, view._prefix = self.forward, self.backward, self._name(name)
        return view

    def record(self, name: str, value) -> None:
        """Record a forward value; name "" is the scope's own output."""
        self.forward[self._name(name)] = np.array(value, copy=True)

    def record_grad(self, name: str, value) -> None:
        self.backward[self._name(name)] = np.array(value, copy=True)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.forward[name]

    def grad(self, name: str) -> np.ndarray:
        return self.backward[name]

    def names(self) -> list:
        return list(self.forward)

    def _name(self, name: str) -> str:
        return ".".join(part for part in (self._prefix, name) if part)


class _NoTrace:
    """What a forward records into when nobody asked for a trace: nothing."""
    active = False

    def scope(self, name):
        return self

    def record(self, name, value):
        pass

    def record_grad(self, name, value):
        pass


NO_TRACE = _NoTrace()
