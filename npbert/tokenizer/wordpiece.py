"""Step 4 of BERT's tokenizer: a word becomes WordPiece tokens by greedy longest match first;
"##" marks a piece that continues a word, and a word that is too long or has a piece that
cannot be matched becomes one [UNK] (the package's docstring has all four steps)."""
from __future__ import annotations

CONTINUATION = "##"
MAX_WORD_CHARS = 200  # the original BERT's max_input_chars_per_word (Hugging Face uses 100)


def wordpiece(word: str, vocab, max_word_chars: int, max_piece_chars: int) -> list[str] | None:
    """Greedy longest-match-first split of one word into vocab pieces; None if impossible.
    max_piece_chars (the longest vocab entry) only bounds the search, it never changes the result."""
    if len(word) > max_word_chars:
        return None
    pieces, start = [], 0
    while start < len(word):
        for end in range(min(len(word), start + max_piece_chars), start, -1):
            piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
            if piece in vocab:
                break
        else:
            return None
        pieces.append(piece)
        start = end
    return pieces


def piece_length(piece: str) -> int:
    """How many characters of the word a (non-[UNK]) piece covers."""
    return len(piece) - len(CONTINUATION) if piece.startswith(CONTINUATION) else len(piece)
