"""The heads npbert fine-tunes, by kind: a new head is its module (npbert/heads/head.py says what
it holds; docs/heads.md how to write one) and one entry in HEADS."""
from __future__ import annotations

from npbert.errors import InputError
from npbert.heads import choice, sequence, span, token

HEADS = {h.kind: h for h in (sequence.HEAD, token.HEAD, span.HEAD, choice.HEAD)}


def head_of(kind: str):
    """The Head of a kind (a Task's kind, or a checkpoint's architecture's)."""
    if kind not in HEADS:
        raise InputError(f"unknown head {kind!r}; choose one of {', '.join(HEADS)}")
    return HEADS[kind]


def head_of_architecture(architectures) -> object | None:
    """The Head whose Hugging Face class is among a config's architectures, or None."""
    return next((h for h in HEADS.values() if h.architecture in (architectures or ())), None)
