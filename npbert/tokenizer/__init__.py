"""BERT's WordPiece tokenizer: normalize -> split into words -> greedy longest-match WordPiece.

The rules are those of the original BERT (google-research/bert tokenization.py), in the order
Hugging Face's BertTokenizerFast applies them, so ids and character offsets match it:

  1. special tokens ("[MASK]", ...) written literally in the text are kept whole;
  2. each character is normalized on its own: NUL, U+FFFD and control characters are dropped,
     whitespace becomes " ", CJK ideographs get spaces around them, accents are stripped
     (NFD, drop Mn) and letters lower-cased, punctuation gets spaces around it;
  3. the normalized text is split on spaces into words;
  4. each word becomes WordPiece tokens: greedy longest match first, "##" marks a piece that
     continues a word, and a word that is too long or has an unmatchable piece is one [UNK].

Because step 2 works character by character, every normalized character knows which
original character it came from, which is what the offsets are made of. docs/tokenizer.md
walks through an example and lists where npbert and Hugging Face's tokenizers differ.

    normalize.py       steps 2-3: characters, normalization, words (BasicTokenizer)
    wordpiece.py       step 4: greedy longest-match WordPiece
    vocab.py           vocab.txt and the special tokens
    truncation.py      longest_first, only_first / only_second, overflowing windows with a stride
    padding.py         padding rows: sides, max_length, multiples
    encoding.py        what a call returns: the outputs, and word / sequence / character alignment
    decoding.py        ids back to text: the WordPiece decoder and HF's clean-up
    files.py           vocab.txt, tokenizer_config.json, tokenizer.json
    bert_tokenizer.py  BertTokenizer: step 1 and Hugging Face's methods over the files above
    trainer.py         learning a WordPiece vocabulary from text
"""
from npbert.tokenizer.bert_tokenizer import BertTokenizer, Tokenized
from npbert.tokenizer.decoding import clean_up_tokenization
from npbert.tokenizer.encoding import CharSpan, Encoding, TokenSpan
from npbert.tokenizer.normalize import BasicTokenizer
from npbert.tokenizer.trainer import train_wordpiece_vocab
from npbert.tokenizer.vocab import SPECIAL_TOKENS, VOCAB_FILE, check_vocab, load_vocab
from npbert.tokenizer.wordpiece import CONTINUATION, MAX_WORD_CHARS, wordpiece

__all__ = ["CONTINUATION", "MAX_WORD_CHARS", "SPECIAL_TOKENS", "VOCAB_FILE", "BasicTokenizer", "BertTokenizer",
           "CharSpan", "Encoding", "TokenSpan", "Tokenized", "check_vocab", "clean_up_tokenization", "load_vocab",
           "train_wordpiece_vocab", "wordpiece"]
