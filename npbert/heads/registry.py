"""The heads npbert fine-tunes, by name: a new head is its module (npbert/heads/head.py says what
it holds; docs/heads.md how to write one) and one entry in HEADS. A task names its head by the
object (npbert/tasks/registry.py); `npbert gradcheck` checks every head listed here."""
from __future__ import annotations

from npbert.heads import choice, sequence, span, token

HEADS = {h.name: h for h in (sequence.HEAD, token.HEAD, span.HEAD, choice.HEAD)}
