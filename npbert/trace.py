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
nothing: a forward that is not traced pays one call that returns at once per record. A value
the layer does not keep (the attention scores, which the kernel never makes whole; a gradient a
fused kernel never writes out) is handed over as a function that makes it again, called only by
a real trace, so a layer has no branch of its own for tracing. A traced forward keeps copies,
so later in-place work cannot change what was recorded.

The layers compute on rows (N, H) (npbert/layers/layout.py); a trace records the padded
batch's arrays, (B, T, ...). `over(batched)` gives the view the model hands its layers: what a
layer records with `record_rows` / `record_grad_rows` is turned back into the batch's shape
(a free reshape on the padded layout, the only one traced).
"""
from __future__ import annotations

import numpy as np


class Trace:
    def __init__(self):
        self.forward: dict[str, np.ndarray] = {}         # name -> value, in the order the forward made them
        self.backward: dict[str, np.ndarray] = {}        # name -> d loss / d value, in the order of the backward
        self._prefix = ""
        self.batched = _same                             # rows (N, ...) -> the batch's (B, T, ...)

    def over(self, batched) -> "Trace":
        """A view of this trace that records row values as batched(rows) makes them."""
        view = self.scope("")
        view.batched = batched
        return view

    def scope(self, name: str) -> "Trace":
        """A view of this trace whose names start with `name.` (what a layer records as "probs"
        inside scope "bert.encoder.layer.0.attention.self" is that layer's probs)."""
        view = Trace.__new__(Trace)
        view.forward, view.backward, view._prefix = self.forward, self.backward, self._name(name)
        view.batched = self.batched
        return view

    def record(self, names, values) -> None:
        """Record forward values: one name and its value, or a tuple of names and their values;
        `values` may be a function that makes them. Name "" is the scope's own output."""
        for name, value in _pairs(names, values):
            self.forward[self._name(name)] = np.array(value, copy=True)

    def record_grad(self, names, values) -> None:
        """Record d loss / d value for the forward's names, as record() takes them."""
        for name, value in _pairs(names, values):
            self.backward[self._name(name)] = np.array(value, copy=True)

    def record_rows(self, names, values) -> None:
        """record() for values over rows (N, ...): recorded in the batch's shape (B, T, ...)."""
        self.record(names, lambda: _mapped(self.batched, names, values))

    def record_grad_rows(self, names, values) -> None:
        """record_grad() for gradients over rows (N, ...), recorded as (B, T, ...)."""
        self.record_grad(names, lambda: _mapped(self.batched, names, values))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.forward[name]

    def grad(self, name: str) -> np.ndarray:
        return self.backward[name]

    def names(self) -> list:
        return list(self.forward)

    def _name(self, name: str) -> str:
        return ".".join(part for part in (self._prefix, name) if part)


def _pairs(names, values):
    values = values() if callable(values) else values  # made again: only a real trace calls it
    return [(names, values)] if isinstance(names, str) else zip(names, values, strict=True)


def _same(x):
    return x


def _mapped(f, names, values):
    return f(values) if isinstance(names, str) else tuple(f(v) for v in values)


class _NoTrace:
    """What a forward records into when nobody asked for a trace: nothing."""

    def scope(self, name):
        return self

    def over(self, batched):
        return self

    def record(self, names, values):
        pass

    def record_grad(self, names, values):
        pass

    def record_rows(self, names, values):
        pass

    def record_grad_rows(self, names, values):
        pass


NO_TRACE = _NoTrace()
