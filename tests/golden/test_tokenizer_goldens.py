"""The tokenizer goldens: the cases exercise and make observable each rule of the spec, and a
tokenizer port that differs is told where (the text, the position, the token)."""
import os

import numpy as np

from npbert import safetensors
from npbert.golden import schema
from support.goldens import VERDICT, conform_case, copy_results


def test_tokenizer_cases_exercise_each_rule(golden, own_results, tmp_path):
    from npbert.golden.tokenizer_cases import HARD_TEXTS, PAIR_MAX_LENGTH, SETTINGS
    manifest = schema.read_manifest(golden)
    cases = {c["name"]: c for c in manifest["cases"] if c["kind"] == "tokenizer"}
    assert set(cases) == {f"tokenizer[{v},{s}]" for v in ("builtin", "rules") for s in SETTINGS}
    t = {name: safetensors.load_file(os.path.join(golden, c["file"])) for name, c in cases.items()}
    for c in cases.values():                            # every setting in the constants, the vocabulary listed
        assert {"do_lower_case", "strip_accents", "tokenize_chinese_chars", "max_input_chars_per_word",
                "vocab_tokens", "texts", "text_pairs", "pair_max_length"} <= set(c["constants"])

    def ids(setting, row, vocab="rules"):
        return t[f"tokenizer[{vocab},{setting}]"]["input_ids"][row]
    RULES = 1, 7, 2                                     # rows: accents, the 160-character word, CJK
    assert not np.array_equal(ids("uncased", RULES[0]), ids("uncased_keep_accents", RULES[0]))
    assert not np.array_equal(ids("uncased", RULES[1]), ids("max_word_chars_100", RULES[1]))
    assert not np.array_equal(ids("uncased", RULES[2], "builtin"), ids("no_cjk_split", RULES[2], "builtin"))
    assert len(HARD_TEXTS[7].split()[0]) == 160
    uncased = t["tokenizer[rules,uncased]"]
    assert (uncased["input_ids"] == 1).any() and not uncased["offset_mapping"][:, 0].any()     # [UNK]; [CLS] (0, 0)
    literal = uncased["input_ids"][6][uncased["attention_mask"][6] == 1]         # "[CLS] literal [MASK] ..." kept whole
    assert list(literal[:2]) == [2, 2] and list(uncased["offset_mapping"][6, 1]) == [0, 5]
    pair = uncased["pair/attention_mask"].sum(axis=1)
    assert pair.max() == PAIR_MAX_LENGTH and (uncased["pair/token_type_ids"] == 1).any()
    results = copy_results(own_results, tmp_path)      # a port that splits words at 200 characters, not 100
    path = os.path.join(results, cases["tokenizer[rules,max_word_chars_100]"]["file"])
    wrong = dict(t["tokenizer[rules,uncased]"])
    safetensors.save_file(wrong, path)
    report = conform_case(golden, results, "tokenizer[rules,max_word_chars_100]")
    assert VERDICT.fullmatch(report.verdict())["name"] == "input_ids"


def test_tokenizer_cases_make_each_spec_rule_observable(golden):
    """The rules a port written from the docs had to guess, each told apart by the goldens:
    offsets in code points and the CJK ranges outside the BMP, max_input_chars_per_word counted after
    normalisation, longest_first when both sides of a pair exceed half the budget."""
    from npbert.golden.tokenizer_cases import HARD_PAIRS, HARD_TEXTS, PAIR_MAX_LENGTH
    cases = {c["name"]: c for c in schema.read_manifest(golden)["cases"] if c["kind"] == "tokenizer"}
    t = {name: safetensors.load_file(os.path.join(golden, c["file"])) for name, c in cases.items()}
    vocab = cases["tokenizer[rules,uncased]"]["constants"]["vocab_tokens"]

    def row(setting, r, prefix=""):                     # (tokens, offsets) of one text, without padding
        case = t[f"tokenizer[rules,{setting}]"]
        real = case[prefix + "attention_mask"][r] == 1
        return [vocab[i] for i in case[prefix + "input_ids"][r][real]], case[prefix + "offset_mapping"][r][real].tolist()
    cjk = HARD_TEXTS.index(next(x for x in HARD_TEXTS if "\U00020000" in x))
    tokens, offsets = row("uncased", cjk)
    assert tokens[:4] == ["[CLS]", "[UNK]", "中", "文"] and offsets[1:4] == [[0, 1], [1, 2], [2, 3]]   # code points
    assert ["a", "[UNK]", "a"] == tokens[5:8] and offsets[4] == [4, 7]     # U+2B820 is no ideograph, U+2B920 is
    assert len(row("no_cjk_split", cjk)[0]) < len(tokens)
    accents = HARD_TEXTS.index(next(x for x in HARD_TEXTS if "\u0301" in x))
    assert [len(w) for w in HARD_TEXTS[accents].split()] == [203, 103]   # over 200 and 100 before normalisation
    assert "[UNK]" not in row("uncased", accents)[0]                    # 103 and 53 after: under 200
    assert row("max_word_chars_100", accents)[0].count("[UNK]") == 1    # 103 > 100 >= 53
    assert row("uncased_keep_accents", accents)[0].count("[UNK]") == 2  # accents kept: 203 and 103 characters
    budget = PAIR_MAX_LENGTH - 3
    for r, (a, b) in enumerate(HARD_PAIRS):
        types = t["tokenizer[rules,uncased]"]["pair/token_type_ids"][r][
            t["tokenizer[rules,uncased]"]["pair/attention_mask"][r] == 1]
        kept = ((types == 0).sum() - 2, (types == 1).sum() - 1)
        if min(len(a.split()), len(b.split())) > budget // 2:            # both over half the budget
            assert kept == (budget // 2, budget - budget // 2), (a, b)
    constants = cases["tokenizer[rules,uncased]"]["constants"]
    assert {"cjk_ranges", "max_input_chars_per_word_counts", "offsets", "pair_truncation"} <= set(constants)
    assert "U+2B920-U+2CEAF" in constants["cjk_ranges"] and "U+20000-U+2A6DF" in constants["cjk_ranges"]


def test_a_tokenizer_verdict_says_where(golden, own_results, tmp_path):
    """Text, position, expected and got (id and piece), the characters around it; offsets in characters;
    a pair's side; no model-case wording."""
    from npbert.golden.tokenizer_cases import HARD_PAIRS, HARD_TEXTS
    results = copy_results(own_results, tmp_path)
    name = "tokenizer[rules,uncased]"
    path = os.path.join(results, "tokenizer", name + ".safetensors")
    right = safetensors.load_file(path)
    wrong = dict(right, input_ids=right["input_ids"].copy())
    wrong["input_ids"][1, 6] = 1                         # text 1 ("UNwanted,running ..."): ##ing -> [UNK]
    wrong["input_ids"][5, 1] = 1                         # a later difference is counted, not shown
    safetensors.save_file(wrong, path)
    verdict = conform_case(golden, results, name).verdict()
    assert VERDICT.fullmatch(verdict)
    assert verdict.startswith("FAIL: first differs at `input_ids` (text 1, position 6): expected `##ing` (11), got "
                              "`[UNK]` (1); the text there: ")
    assert "…'Nwantéd,runn«ing» wanted unwa'…" in verdict and "2 positions of `input_ids` differ" in verdict
    assert "mask value" not in verdict and "1e30" not in verdict
    offsets = dict(right, offset_mapping=right["offset_mapping"].copy())
    offsets["offset_mapping"][1, 6] = [14, 17]           # a port counting UTF-8 bytes: é is 2
    safetensors.save_file(offsets, path)
    verdict = conform_case(golden, results, name).verdict()
    assert "(text 1, position 6): expected characters 13-16 ('ing'), got 14-17 ('ng '), of the token `##ing` (11)" \
        in verdict, verdict
    pair = dict(right, **{"pair/token_type_ids": right["pair/token_type_ids"].copy()})
    pair["pair/token_type_ids"][3, 8] = 0                # pair 3's second text, "hello world ...": world
    safetensors.save_file(pair, path)
    verdict = conform_case(golden, results, name).verdict()
    assert "`pair/token_type_ids` (pair 3, second text, position 8): expected 1, got 0, at the token `world`" in \
        verdict and "'hello «world» the second '…" in verdict, verdict
    assert HARD_TEXTS[1].startswith("UNwant\u00e9d,running") and HARD_PAIRS[3][1].startswith("hello world")


def test_a_tokenizer_port_padding_to_another_width_is_told_where(golden, own_results, tmp_path):
    """A port whose batch is one token narrower (it truncated the longest text): the first token it
    lacks is named, with the widths."""
    results = copy_results(own_results, tmp_path)
    name = "tokenizer[rules,uncased]"
    path = os.path.join(results, "tokenizer", name + ".safetensors")
    right = safetensors.load_file(path)
    longest = int(right["attention_mask"].sum(axis=1).argmax())
    narrow = {k: (v[:, :-1].copy() if k in ("input_ids", "token_type_ids", "attention_mask", "offset_mapping") else v)
              for k, v in right.items()}
    end = int(right["attention_mask"][longest].sum()) - 1       # its [SEP] one token early
    narrow["input_ids"][longest, end - 1] = right["input_ids"][longest, end]
    safetensors.save_file(narrow, path)
    verdict = conform_case(golden, results, name).verdict()
    assert VERDICT.fullmatch(verdict) and verdict.startswith(f"FAIL: first differs at `input_ids` (text {longest}, "
                                                             f"position {end - 1}): expected `##e` (21), got `[SEP]` (3)")
    assert verdict.endswith("the port's rows are 151 tokens wide, the golden's 152"), verdict
