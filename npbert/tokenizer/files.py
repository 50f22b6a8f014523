"""A tokenizer's files, as Hugging Face writes and reads them:

    vocab.txt              one token per line (BERT's own format; transformers 5 no longer writes it)
    tokenizer_config.json  the options: do_lower_case, strip_accents, tokenize_chinese_chars,
                           model_max_length, clean_up_tokenization_spaces, padding_side, ... (and
                           never_split, do_basic_tokenize where not the default, as transformers 4's
                           Python BertTokenizer writes and reads them)
    tokenizer.json         the Rust tokenizer whole: WordPiece model with its vocabulary and
                           max_input_chars_per_word, BertNormalizer, TemplateProcessing, decoder, and
                           the added tokens (add_tokens) after BERT's five special ones

Reading: the vocabulary from vocab.txt, else from tokenizer.json's model; the options from
tokenizer_config.json, as transformers 5 takes them (it ignores tokenizer.json's normaliser), and
max_input_chars_per_word from tokenizer.json's model where it is there (transformers 5 always
uses 100, whatever the files say: docs/tokenizer.md).
"""
from __future__ import annotations

import json
import os

from npbert.errors import JSON_ERRORS, DataError
from npbert.reading import VOCAB_LIMIT, read_bytes, regular_file
from npbert.tokenizer.vocab import CLS, MASK, PAD, SEP, UNK, VOCAB_FILE, load_vocab

CONFIG_FILE = "tokenizer_config.json"
HF_TOKENIZER_FILE = "tokenizer.json"
OPTIONS = ("do_lower_case", "strip_accents", "tokenize_chinese_chars", "max_input_chars_per_word",
           "model_max_length", "clean_up_tokenization_spaces", "padding_side", "truncation_side")
PYTHON_OPTIONS = {"never_split": None, "do_basic_tokenize": True}   # written only where not these defaults
SPECIAL_NAMES = {"unk_token": UNK, "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK}


def read_tokenizer_files(directory) -> tuple[list, dict, list]:
    """(the vocabulary's tokens in id order, the options the files set, the added tokens as (id,
    content, special) in id order) of a tokenizer directory."""
    if not os.path.isdir(directory):
        raise DataError(f"tokenizer directory not found: {directory}")
    config = _read_json(os.path.join(directory, CONFIG_FILE))
    options = {k: config[k] for k in (*OPTIONS, *PYTHON_OPTIONS) if k in config}
    hf = _read_json(os.path.join(directory, HF_TOKENIZER_FILE))
    added = _added_tokens(hf.get("added_tokens") or [], os.path.join(directory, HF_TOKENIZER_FILE))
    model = hf.get("model")
    model = model if isinstance(model, dict) else {}
    if "max_input_chars_per_word" in model:
        options["max_input_chars_per_word"] = model["max_input_chars_per_word"]
    max_length = options.pop("model_max_length", None)
    if isinstance(max_length, int) and max_length <= 10**9:  # HF writes a huge number for "no limit"
        options["model_max_length"] = max_length
    vocab_path = os.path.join(directory, VOCAB_FILE)
    if os.path.exists(vocab_path) or "vocab" not in model:
        return load_vocab(vocab_path), options, added
    return _vocab_of(model["vocab"], os.path.join(directory, HF_TOKENIZER_FILE)), options, added


def _added_tokens(entries, path) -> list[tuple[int, str, bool]]:
    """tokenizer.json's added tokens but BERT's five special ones: (id, content, special), by id. Only
    those add_tokens makes: found as written if special, after normalization if not, nothing else."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DataError(f"{path}: added_tokens must be a list of objects")
    added = []
    for e in entries:
        token_id, content, special = e.get("id"), e.get("content"), e.get("special", False)
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not isinstance(content, str) \
                or not isinstance(special, bool):
            raise DataError(f"{path}: an added token needs an integer id, a string content and a boolean special")
        if special and content in SPECIAL_NAMES.values():
            continue
        if [e.get(k, False) for k in ("single_word", "lstrip", "rstrip")] != [False] * 3 \
                or e.get("normalized", not special) != (not special):
            raise DataError(f"{path}: added token {content!r} is matched in a way npbert does not (single_word, "
                            "lstrip, rstrip, or normalized other than not special)")
        added.append((token_id, content, special))
    return sorted(added)


def _vocab_of(vocab, path) -> list:
    """tokenizer.json's {token: id} as a list in id order; the ids must be 0 .. n-1."""
    if not isinstance(vocab, dict) or not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        raise DataError(f"{path}: model.vocab must map tokens to integer ids")
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in tokens] != list(range(len(tokens))):
        raise DataError(f"{path}: model.vocab's ids are not 0 .. {len(tokens) - 1}, each once")
    return tokens


def write_tokenizer_files(tok, directory) -> list[str]:
    """vocab.txt, tokenizer_config.json and tokenizer.json for `tok`; -> their paths."""
    os.makedirs(directory, exist_ok=True)
    vocab_path = os.path.join(directory, VOCAB_FILE)
    with open(vocab_path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(token + "\n" for token in tok.ids_to_tokens))
    config = {"tokenizer_class": "BertTokenizer", **{k: getattr(tok, k) for k in OPTIONS}, **SPECIAL_NAMES,
              **{k: v for k, v in python_options(tok).items() if v != PYTHON_OPTIONS[k]}}
    paths = [vocab_path]
    for name, content in ((CONFIG_FILE, config), (HF_TOKENIZER_FILE, hf_tokenizer_json(tok))):
        paths.append(os.path.join(directory, name))
        with open(paths[-1], "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, ensure_ascii=False)
            f.write("\n")
    return paths


def hf_tokenizer_json(tok) -> dict:
    """The tokenizers library's serialisation of `tok` (what BertTokenizerFast.save_pretrained writes)."""
    def piece(kind, name, type_id):
        return {kind: {"id": name, "type_id": type_id}}
    single = [piece("SpecialToken", CLS, 0), piece("Sequence", "A", 0), piece("SpecialToken", SEP, 0)]
    added = {**{t: False for t in tok._normalized_tokens}, **{t: True for t in tok._special_tokens}}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": tok.convert_tokens_to_ids(t), "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": not special, "special": special}
                         for t, special in sorted(added.items(), key=lambda item: tok.convert_tokens_to_ids(item[0]))],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": tok.tokenize_chinese_chars,
                       "strip_accents": tok.strip_accents, "lowercase": tok.do_lower_case}
        if tok.do_basic_tokenize else None,
        "pre_tokenizer": {"type": "BertPreTokenizer" if tok.do_basic_tokenize else "WhitespaceSplit"},
        "post_processor": {"type": "TemplateProcessing", "single": single,
                           "pair": single + [piece("Sequence", "B", 1), piece("SpecialToken", SEP, 1)],
                           "special_tokens": {t: {"id": t, "ids": [tok.vocab[t]], "tokens": [t]} for t in (CLS, SEP)}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": UNK, "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": tok.max_input_chars_per_word, "vocab": dict(tok.vocab)},
    }


def python_options(tok) -> dict:
    """The options only transformers' Python BertTokenizer has, as tokenizer_config.json holds them."""
    return {"never_split": sorted(tok.basic.never_split) or None, "do_basic_tokenize": tok.do_basic_tokenize}


def _read_json(path) -> dict:
    if not os.path.exists(path):
        return {}
    regular_file(path, "tokenizer file", "a checkpoint's files are read whole")   # a FIFO would block
    try:
        data = json.loads(read_bytes(path, "tokenizer file", VOCAB_LIMIT))      # bounded, as vocab.txt is
    except JSON_ERRORS as e:
        raise DataError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path} must hold a JSON object")
    return data
