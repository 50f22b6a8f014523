"""Tokens back to text, as Hugging Face does it: the Rust WordPiece decoder (a "##" piece glued to
the one before, every other token after a space, and each token cleaned on its own of the space
before . ? ! , ...), then, when asked (clean_up_tokenization_spaces), transformers' clean-up of
the whole string, which also joins contractions ("don ' t" -> "don't")."""
from __future__ import annotations

from npbert.tokenizer.wordpiece import CONTINUATION

# (spaced, joined) in the order both clean-ups apply them; the decoder's has one more pair
_SPACED = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"))
_CONTRACTIONS = ((" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
DECODER_CLEANUP = _SPACED + ((" do not", " don't"),) + _CONTRACTIONS    # tokenizers' decoders/wordpiece.rs
STRING_CLEANUP = _SPACED + _CONTRACTIONS                                 # transformers' clean_up_tokenization


def _replace_all(text: str, pairs) -> str:
    for spaced, joined in pairs:
        text = text.replace(spaced, joined)
    return text


def wordpiece_decode(tokens) -> str:
    """The WordPiece decoder of a BERT tokenizer.json (prefix "##", cleanup on), token by token."""
    out = []
    for i, token in enumerate(tokens):
        if i:
            token = token[len(CONTINUATION):] if token.startswith(CONTINUATION) else " " + token
        out.append(_replace_all(token, DECODER_CLEANUP))
    return "".join(out)


def clean_up_tokenization(text: str) -> str:
    """Hugging Face's clean_up_tokenization: undo the spaces that tokenization put before
    punctuation and inside English contractions."""
    return _replace_all(text, STRING_CLEANUP)
