"""The whole pipeline: corpus -> vocabulary -> tokens -> shards, through prepare() and `npbert prepare`."""
import dataclasses
import json
import os

import numpy as np
import pytest

from support.hostile import LIMIT, npbert as run_npbert
from npbert.cli import main
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.data.prepare import PrepareOptions, prepare
from npbert.data.pretraining_data import PretrainingData
from npbert.data.shards import MANIFEST, VOCAB_FILE
from npbert.errors import DataError
from npbert.model import pretraining_forward
from npbert.model_params import init_params

QUIET = dict(log=lambda *a: None)
TEXT = """The farmer feeds the cows every morning.
The cows give milk.
The farmer sells the milk at the market.

The baker bakes bread in the oven.
The bread is warm.
People buy the bread at the bakery.

The pilot flies the plane.
The plane lands at the airport.
"""


def small_vocab(path):
    words = sorted({w for line in TEXT.lower().split("\n") for w in line.replace(".", " .").split()})
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def builtin_dir(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("builtin"))
    prepare(PrepareOptions(out=out, max_documents=120, dupe_factor=2, seed=3), **QUIET)
    return out


def test_builtin_corpus_end_to_end_into_the_model(builtin_dir):
    manifest = json.load(open(os.path.join(builtin_dir, MANIFEST)))
    assert manifest["options"]["max_seq_length"] == 64 and manifest["vocab_size"] == len(builtin_vocab())
    assert manifest["splits"]["heldout"]["documents"] == 2 and manifest["splits"]["train"]["documents"] == 118
    summary = manifest["splits"]["train"]["summary"]
    assert 0.14 < summary["mask_rate"] < 0.18 and abs(summary["mask_share"] - 0.8) < 0.03
    assert 0.35 < summary["is_next_share"] < 0.55
    data = PretrainingData(builtin_dir)
    a = data.arrays
    original = a["input_ids"].copy()                                # masked positions given back their ids
    for r in range(len(original)):
        original[r, a["masked_lm_positions"][r, :a["num_masked"][r]]] = a["masked_lm_ids"][r, :a["num_masked"][r]]
    assert not (original == 1).any()                                # builtin text never needs [UNK]
    config = BertConfig(vocab_size=data.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    params = init_params(config, np.random.default_rng(0))
    out, _ = pretraining_forward(params, config, **next(data.batches(4, seed=0)))
    assert np.isfinite(out["loss"]) and abs(out["nsp_loss"] - np.log(2)) < 0.1


def test_a_finished_directory_is_not_redone(builtin_dir):
    before = {f: os.path.getmtime(os.path.join(builtin_dir, f)) for f in os.listdir(builtin_dir)}
    log = []
    prepare(PrepareOptions(out=builtin_dir, max_documents=120, dupe_factor=2, seed=3), log=log.append)
    assert log == [f"{builtin_dir} is already prepared with these options"]
    assert before == {f: os.path.getmtime(os.path.join(builtin_dir, f)) for f in os.listdir(builtin_dir)}


def test_a_text_corpus_with_a_given_vocabulary(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    vocab = small_vocab(tmp_path / "vocab.txt")
    out = str(tmp_path / "out")
    manifest = prepare(PrepareOptions(corpus=str(corpus), vocab=vocab, out=out, max_seq_length=24,
                                      heldout_fraction=0.0, dupe_factor=4), **QUIET)
    assert manifest["options"]["corpus"] == str(corpus) and manifest["options"]["vocab_size"] is None
    assert manifest["splits"]["train"]["documents"] == 3
    assert open(os.path.join(out, VOCAB_FILE), encoding="utf-8").read() == open(vocab, encoding="utf-8").read()
    assert len(PretrainingData(out)) == manifest["splits"]["train"]["counts"]["instances"] > 0


def test_a_vocabulary_without_special_tokens_is_a_clear_error(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the\nfarmer\n[UNK]\n", encoding="utf-8")
    code = main(["prepare", "--corpus", str(corpus), "--vocab", str(vocab), "--out", str(tmp_path / "o"),
                 "--heldout-fraction", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "[PAD]" in err and "[CLS]" in err and "Traceback" not in err


@pytest.mark.parametrize("text, message", [
    ("", "holds no text"),
    ("\n \n\n\t\n", "holds no text"),
    ("Only one document here.\nWith two sentences.\n", "needs at least 2"),
])
def test_unusable_corpora_fail_with_one_line(tmp_path, capsys, text, message):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    code = main(["prepare", "--corpus", str(corpus), "--vocab", small_vocab(tmp_path / "v.txt"),
                 "--out", str(tmp_path / "o"), "--heldout-fraction", "0"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_an_output_path_that_is_a_file_fails_before_anything_is_read(tmp_path, capsys):
    existing = tmp_path / "notes.txt"
    existing.write_text("keep me\n")
    # the corpus does not exist either: the --out check must come first (nothing read or written)
    sub = existing / "sub"
    for out, message in ((existing, f"output directory {existing} is an existing file, not a directory"),
                         (sub, f"output directory {sub} cannot be made: {existing} is a file")):
        assert main(["prepare", "--corpus", str(tmp_path / "missing.txt"), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"npbert prepare: error: {message}\n"
    assert existing.read_text() == "keep me\n" and sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_prose_without_blank_lines_is_prepared_and_says_how_it_was_cut(tmp_path, capsys):
    # before: "the corpus has 1 document(s)", advising --heldout-fraction 0, which failed too
    corpus = tmp_path / "my_text.txt"
    corpus.write_text("".join(" ".join(line for line in TEXT.splitlines() if line) + "\n" for _ in range(4)),
                      encoding="utf-8")                        # 4 lines of 8 sentences, no blank line
    assert main(["prepare", "--corpus", str(corpus), "--vocab", small_vocab(tmp_path / "v.txt"),
                 "--out", str(tmp_path / "o"), "--heldout-fraction", "0"]) == 0
    out = capsys.readouterr().out
    assert f"{corpus} has no blank lines between documents: each of its 4 lines is a document" in out
    assert "read 4 documents" in out


def test_too_few_documents_fails_before_a_vocabulary_is_trained(tmp_path, capsys, monkeypatch):
    import npbert.tokenizer.trainer
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", None)   # would fail if called
    corpus = tmp_path / "short.txt"
    corpus.write_text("One sentence here. And a second one.\n", encoding="utf-8")
    assert main(["prepare", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "the corpus has 1 document(s); next-sentence prediction needs at least 4 (2 to train, 2 held out)" in err
    assert "--heldout-fraction 0" not in err and len(err.splitlines()) == 1     # it would not help here
    assert not (tmp_path / "o").exists()


def test_the_command_prints_the_statistics(tmp_path, capsys):
    out = str(tmp_path / "cli")
    assert main(["prepare", "--max-documents", "40", "--dupe-factor", "1", "--out", out, "--whole-word-mask"]) == 0
    printed = capsys.readouterr().out
    for expected in ("read 40 documents from builtin", "train: 38 documents", "predicted =", "[MASK]",
                     "IsNext", "sequence lengths:", f"wrote {out}"):
        assert expected in printed
    assert json.load(open(os.path.join(out, MANIFEST)))["options"]["whole_word_mask"] is True
    assert main(["prepare", "--max-documents", "41", "--dupe-factor", "1", "--out", out]) == 2
    assert "max_documents=40 (now 41)" in capsys.readouterr().err


def test_a_mask_mix_is_printed_recorded_and_refused_when_it_differs(tmp_path, capsys):
    out = str(tmp_path / "mix")
    command = ["prepare", "--max-documents", "40", "--dupe-factor", "1", "--out", out, "--mask-mix"]
    assert main(command + ["100/0/0"]) == 0
    assert "[MASK] 100.0% / same 0.0% / random 0.0% (mask mix 100/0/0)" in capsys.readouterr().out
    manifest = json.load(open(os.path.join(out, MANIFEST)))
    assert manifest["options"]["mask_mix"] == "100/0/0" and manifest["splits"]["train"]["summary"]["mask_share"] == 1.0
    data = PretrainingData(out)
    a = data.arrays
    predicted = np.arange(a["masked_lm_positions"].shape[1]) < a["num_masked"][:, None]            # (n, P)
    shown = np.take_along_axis(a["input_ids"], a["masked_lm_positions"].astype(np.int64), axis=1)  # (n, P)
    assert data.mask_mix == "100/0/0" and (shown[predicted] == manifest["special_ids"]["mask"]).all()
    assert main(command + ["80/10/10"]) == 2
    assert "mask_mix='100/0/0' (now '80/10/10')" in capsys.readouterr().err
    assert main(command + ["100/00/0"]) == 0                          # the same mix, spelt otherwise
    assert "already prepared" in capsys.readouterr().out
    assert main(command + ["90/20/0"]) == 2
    err = capsys.readouterr().err
    assert err == "npbert prepare: error: mask_mix 90/20/0 sums to 110%, not 100%: MASK/SAME/RND share out the " \
                  "chosen positions\n"


def prepared_before(out, option):
    """Data prepared into `out` and its manifest rewritten as npbert wrote it before `option`
    existed; then prepared again with the same options -> (options, what prepare said)."""
    opts = PrepareOptions(out=str(out), max_documents=30, dupe_factor=1)
    prepare(opts, **QUIET)
    manifest = json.load(open(out / MANIFEST))
    del manifest["options"][option]
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    log = []
    prepare(opts, log=log.append)
    return opts, log


def test_data_prepared_before_the_mask_mix_existed_was_masked_80_10_10(tmp_path):
    out = tmp_path / "old"
    _, log = prepared_before(out, "mask_mix")
    assert log == [f"{out} is already prepared with these options"] and PretrainingData(str(out)).mask_mix == "80/10/10"
    with pytest.raises(DataError, match=r"mask_mix='80/10/10' \(now '0/0/100'\)"):
        prepare(PrepareOptions(out=str(out), max_documents=30, dupe_factor=1, mask_mix="0/0/100"), **QUIET)


def test_single_sentence_instances_are_prepared_recorded_and_counted(tmp_path, capsys):
    out = str(tmp_path / "sentences")
    command = ["prepare", "--max-documents", "40", "--dupe-factor", "1", "--out", out]
    assert main(command + ["--instances", "sentences"]) == 0
    said = capsys.readouterr().out
    assert "  next sentence: none (single sentences: masked LM only)" in said and "IsNext" not in said
    data = PretrainingData(out)
    a = data.arrays
    assert data.instances == "sentences" and data.manifest["options"]["instances"] == "sentences"
    assert (a["token_type_ids"] == 0).all()                            # one segment
    sep = data.manifest["special_ids"]["sep"]
    assert ((a["input_ids"] == sep).sum(axis=1) == 1).all()            # one [SEP] an instance: no B segment
    assert main(command + ["--instances", "pairs"]) == 2
    assert "instances='sentences' (now 'pairs')" in capsys.readouterr().err


def test_data_prepared_before_the_instance_kinds_existed_holds_pairs(tmp_path):
    out = tmp_path / "old"
    _, log = prepared_before(out, "instances")
    assert log == [f"{out} is already prepared with these options"] and PretrainingData(str(out)).instances == "pairs"


def test_a_text_corpus_without_vocabulary_trains_one_and_reuses_it_on_resume(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf-8")      # 9 documents
    out = tmp_path / "out"
    opts = PrepareOptions(corpus=str(corpus), out=str(out), vocab_size=60, max_seq_length=24, heldout_fraction=0.25)
    manifest = prepare(opts, **QUIET)
    assert manifest["options"]["vocab_size"] == 60 and manifest["options"]["dupe_factor"] == 2
    vocab = open(out / VOCAB_FILE, encoding="utf-8").read().split("\n")[:-1]
    assert len(vocab) <= 60 and {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} <= set(vocab)
    # an interrupted run (manifest incomplete) reuses the vocabulary it trained instead of training again
    before = open(out / MANIFEST, encoding="utf-8").read()
    (out / MANIFEST).write_text(before.replace('"complete": true', '"complete": false'), encoding="utf-8")
    import npbert.tokenizer.trainer
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", None)
    log = []
    prepare(opts, log=log.append)
    assert any("reusing the vocabulary" in line for line in log)
    assert open(out / MANIFEST, encoding="utf-8").read() == before


def test_prepare_refuses_an_out_directory_it_did_not_make(tmp_path, capsys):
    mine = tmp_path / "u"
    mine.mkdir()
    (mine / "vocab.txt").write_text("mine")
    assert main(["prepare", "--out", str(mine), "--max-documents", "30"]) == 2
    assert "is not empty and holds no manifest.json" in capsys.readouterr().err
    assert os.listdir(mine) == ["vocab.txt"] and (mine / "vocab.txt").read_text() == "mine"


def test_data_prepared_from_a_corpus_since_edited_is_not_reused(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends here .\n\n" for i in range(30)))
    opts = PrepareOptions(corpus=str(corpus), out=str(tmp_path / "d"), max_seq_length=32, dupe_factor=1)
    prepare(opts, **QUIET)
    corpus.write_text("".join(f"story {i} starts now .\nit stops right here .\n\n" for i in range(30)))
    with pytest.raises(DataError, match="prepared with other options: corpus_sha256="):
        prepare(opts, **QUIET)


def test_progress_says_at_most_every_two_seconds_how_far_and_how_fast():
    from npbert.data.progress import Progress
    ticks = iter([0.0, 1.0, 2.5, 3.0, 4.4, 5.0])                  # the start, then one per update
    lines = []
    progress = Progress(lines.append, "tokenizing", total=10, clock=lambda: next(ticks))
    for done in range(1, 6):
        progress.update(done)
    assert lines == ["  tokenizing: 2 of 10 documents (1.2 s each)", "  tokenizing: 5 of 10 documents (1.0 s each)"]
    # a slow stage (a shard every few seconds) reads as seconds each, never "(0/s)"


def test_every_slow_stage_reports_progress_even_when_the_stage_lines_are_silenced(tmp_path, monkeypatch):
    # pretrain silences prepare's stage lines (log) but shows its notes: a minute of reading,
    # vocabulary training or tokenizing (IMDB) must still say how far it has got
    from npbert.data import progress
    monkeypatch.setattr(progress, "EVERY_SECONDS", 0.0)           # a line at every update: a slow machine
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf-8")                  # 7 documents (the copies join at one seam each)
    notes = []
    prepare(PrepareOptions(corpus=str(corpus), out=str(tmp_path / "out"), vocab_size=60, max_seq_length=24,
                           heldout_fraction=0.25), log=lambda *a: None, notes=notes.append)
    for stage in ("reading: 7 documents", "training the vocabulary, counting words: 7 of 7 documents",
                  "training the vocabulary, merging pieces: 60 of 60 tokens", "tokenizing: 7 of 7 documents",
                  "writing: 2 of 2 shards"):
        assert any(line.startswith(f"  {stage} (") for line in notes), (stage, notes)


# --- sizes that pass the range checks but cannot be met -----------------------------------------------

def test_more_predictions_than_positions_is_refused_before_anything_is_read(tmp_path):
    # before: --max-predictions-per-seq 1000000000 tried to allocate 363 GiB of masked slots (in a
    # child with a memory limit here: a regression is its MemoryError, not the machine's)
    r = run_npbert("prepare", "--out", str(tmp_path / "P"), "--max-predictions-per-seq", "1000000000", memory=LIMIT)
    assert r.returncode == 2 and r.stderr == ("npbert prepare: error: max_predictions_per_seq 1,000,000,000 is more than "
                                              "the 64 positions of an instance (max_seq_length): give at most 64\n")
    assert os.listdir(tmp_path) == []


def test_the_default_predictions_follow_a_short_max_seq_length(tmp_path, capsys):
    """Before: --max-seq-length 16 alone was refused, the default max_predictions_per_seq (20) being
    more than 16 positions. The default is min(20, max_seq_length), recorded resolved; a value given
    is still refused when too big, and data prepared with the old default (20) are still reused."""
    out = str(tmp_path / "short")
    command = ["prepare", "--max-documents", "30", "--dupe-factor", "1", "--out", out, "--max-seq-length", "16"]
    assert main(command) == 0
    assert PretrainingData(out).manifest["options"]["max_predictions_per_seq"] == 16
    assert main(command + ["--max-predictions-per-seq", "20"]) == 2
    assert capsys.readouterr().err.endswith("max_predictions_per_seq 20 is more than the 16 positions of an instance "
                                            "(max_seq_length): give at most 16\n")
    old = PrepareOptions(out=str(tmp_path / "old"), max_documents=30, dupe_factor=1)
    given = dataclasses.replace(old, max_predictions_per_seq=20)      # as every manifest recorded it before
    assert prepare(given, **QUIET)["options"]["max_predictions_per_seq"] == 20
    log = []
    prepare(old, log=log.append)                                       # the default resolves to what was recorded
    assert log == [f"{old.out} is already prepared with these options"]


def test_a_dupe_factor_whose_shards_cannot_fit_on_the_disk_is_refused_before_they_are_planned(tmp_path):
    # unchecked, --dupe-factor 1000000000 would grow its plan silently until a MemoryError
    r = run_npbert("prepare", "--out", str(tmp_path / "P"), "--max-documents", "100", "--dupe-factor", "1000000000",
                   memory=LIMIT)
    err = r.stderr.splitlines()[-1]
    assert r.returncode == 2 and err.startswith("npbert prepare: error: dupe_factor 1,000,000,000 makes ")
    assert "GB free; lower --dupe-factor" in err and os.listdir(tmp_path) == []


@pytest.mark.parametrize("value", ["0", "1"])
def test_a_masked_lm_prob_that_masks_nothing_or_everything_is_refused_while_parsing(capsys, value):
    with pytest.raises(SystemExit):
        main(["prepare", "--masked-lm-prob", value])
    assert f"argument --masked-lm-prob: must be a number in (0, 1), got {value}" in capsys.readouterr().err


def test_no_ratio_to_a_baseline_of_zero():
    # before: --masked-lm-prob 1e-300 (one token an instance) left a baseline of 0.000 and "111111111.1x"
    from npbert.pretraining.recipe import times_baseline
    assert times_baseline(0.111, 0.0) == "" and times_baseline(0.5, 0.1) == ", 5.0x"
