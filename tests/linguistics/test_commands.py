"""`npbert minimal-pairs`, `npbert attention-heads` and `npbert probe` end to end on a small random
model with the built-in vocabulary and a small prepared built-in corpus: what they print and
write, and their refusals (one line, exit 2, nothing written)."""
import json
import os

import numpy as np
import pytest

from npbert.checkpoint import save_pretrained
from npbert.cli import main
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.data.prepare import PrepareOptions, prepare
from npbert.linguistics.attention_heads import STATISTICS
from npbert.model_params import init_params
from npbert.tokenizer import BertTokenizer
from support.patience import call_beside_fifos

GOOD = {"sentence_good": "the children play chess .", "sentence_bad": "the children plays chess .", "field": "morphology",
        "linguistics_term": "subject_verb_agreement", "UID": "toy", "pairID": "0"}


def small_model(directory, heads=True, positions=64, vocab=None):
    tokenizer = BertTokenizer(vocab or builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=positions)
    save_pretrained(str(directory), config, init_params(config, np.random.default_rng(0), heads=heads), tokenizer)
    return str(directory)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run-like directory: checkpoint/ and the data/ it would have been pretrained on."""
    root = tmp_path_factory.mktemp("run")
    prepare(PrepareOptions(corpus="builtin", max_documents=40, out=str(root / "data")), log=lambda *_: None)
    small_model(root / "checkpoint")
    return root


def write_pairs(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return str(path)


def one_error_line(capsys, command):
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"npbert {command}: error: "), err
    return err


def test_minimal_pairs_scores_the_builtin_set_beside_its_baselines(run_dir, tmp_path, capsys):
    scores, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    code = main(["minimal-pairs", str(run_dir / "checkpoint"), "builtin", "--per-paradigm", "8", "--baselines",
                 "unigram,ngram,random", "--scores", str(scores), "--json", str(summary)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "48 minimal pairs from builtin (6 paradigms); 0 hold [UNK]" in out
    assert "counting" in out and "training sentences of" in out and "tokens/s" in out
    header = next(line for line in out.splitlines() if line.startswith("group"))
    assert header.split()[-3:] == ["random", "unigram", "3-gram"]
    assert any(line.startswith("paradigm transitive ") for line in out.splitlines())
    verdict = out.splitlines()[-1]                                             # after the table
    assert verdict.startswith("overall, bert (") and "random (" in verdict and "3-gram (" in verdict, out
    lines = [json.loads(line) for line in open(scores)]
    assert len(lines) == 48 and set(lines[0]) == {"pairID", "UID", "pll_good", "pll_bad", "tokens_good",
                                                  "tokens_bad", "correct", "has_unk"}
    assert all(r["correct"] == (r["pll_good"] > r["pll_bad"]) for r in lines)
    record = json.load(open(summary))
    assert record["pairs"] == 48 and record["scorers"] == ["bert", "random", "unigram", "3-gram"]
    assert record["groups"][0]["name"] == "overall" and record["costs"]["bert"]["copies"] > 0


def test_a_long_pair_file_says_how_far_reading_and_tokenizing_are(run_dir, tmp_path, capsys, monkeypatch):
    from npbert.linguistics import pairs
    monkeypatch.setattr(pairs, "PROGRESS_SECONDS", 0.0)              # a line for every pair, not every 10 s
    path = write_pairs(tmp_path / "p.jsonl", [{**GOOD, "pairID": str(k)} for k in range(5)])
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), path, "--baselines", "none"]) == 0
    out = capsys.readouterr().out.splitlines()
    reading = [line.strip() for line in out if line.strip().startswith(f"reading {path}:")]
    tokenizing = [line.strip() for line in out if line.strip().startswith("tokenizing:")]
    assert reading[-1].startswith(f"reading {path}: 5 pairs (") and len(reading) >= 4, out
    assert tokenizing[-1].startswith("tokenizing: 5 of 5 pairs (") and len(tokenizing) >= 4, out
    assert out.index(next(x for x in out if x.strip() == reading[-1])) < out.index(
        next(x for x in out if x.strip() == tokenizing[0]))                    # read, then tokenized


def test_minimal_pairs_keeps_freed_memory_for_its_batches(run_dir, tmp_path, capsys, monkeypatch):
    """Every batch allocates the same large buffers: glibc must keep them (npbert.allocator), or the
    each batch page-faults them in again (sys time beside the matmuls)."""
    from npbert import allocator
    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append(1) or True)
    path = write_pairs(tmp_path / "p.jsonl", [GOOD])
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), path, "--baselines", "none"]) == 0
    assert calls == [1], capsys.readouterr().out


def test_unk_pairs_are_counted_and_can_be_left_out(run_dir, tmp_path, capsys):
    pairs = write_pairs(tmp_path / "p.jsonl", [GOOD, {**GOOD, "sentence_good": "the children play zyxwq .",
                                                      "pairID": "1"}])
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), pairs, "--baselines", "none"]) == 0
    assert "2 minimal pairs from" in capsys.readouterr().out
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), pairs, "--baselines", "none", "--exclude-unk"]) == 0
    out = capsys.readouterr().out
    assert "1 hold [UNK] (left out)" in out
    assert any(line.split()[:2] == ["overall", "1"] for line in out.splitlines())
    only_unk = write_pairs(tmp_path / "unk.jsonl", [{**GOOD, "sentence_bad": "the children zyxwq chess ."}])
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), only_unk, "--baselines", "none", "--exclude-unk"]) == 2
    assert "all 1 pairs hold [UNK]" in one_error_line(capsys, "minimal-pairs")


@pytest.mark.parametrize("content, message", [
    ([GOOD, "{not json"], r"p.jsonl:2: not a JSON object"),
    ([GOOD, {k: v for k, v in GOOD.items() if k != "UID"}], r"p.jsonl:2: the pair has no UID"),
    ([{**GOOD, "sentence_bad": ""}], r"p.jsonl:1: sentence_bad must be a non-empty string"),
    ([{**GOOD, "sentence_good": " ".join(["anna"] * 70)}], r"p.jsonl:1: sentence_good is 70 pieces, 72 positions"),
    ([], r"p.jsonl holds no minimal pairs"),
    (["[1, 2]"], r"p.jsonl:1: a line must be a JSON object"),
    ([GOOD, "[" * 100_000 + "]" * 100_000], r"p.jsonl:2: not a JSON object \(nested too deep\)"),   # a RecursionError
    ([GOOD, '{"pairID": ' + "9" * 5000 + "}"], r"p.jsonl:2: not a JSON object \(.*digits"),   # int's digit limit
])
def test_malformed_pairs_one_line_exit_2_nothing_written(run_dir, tmp_path, capsys, content, message):
    pairs = write_pairs(tmp_path / "p.jsonl", content)
    scores = tmp_path / "scores.jsonl"
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), pairs, "--scores", str(scores)]) == 2
    assert pytest.importorskip("re").search(message, one_error_line(capsys, "minimal-pairs"))
    assert not scores.exists() and os.listdir(tmp_path) == ["p.jsonl"]


def test_refusals_before_any_work(run_dir, tmp_path, capsys):
    pairs = write_pairs(tmp_path / "p.jsonl", [GOOD])
    no_head = small_model(tmp_path / "no-head", heads=False)
    cases = [
        ([no_head, pairs], "no masked-LM head"),
        ([str(run_dir / "checkpoint"), str(tmp_path / "missing.jsonl")], "minimal pairs not found"),
        ([str(run_dir / "checkpoint"), str(tmp_path / "empty-dir")], "no .jsonl files"),
        ([str(run_dir / "checkpoint"), pairs, "--scores", str(tmp_path / "nowhere" / "s.jsonl")], "cannot write"),
        ([str(run_dir / "checkpoint"), pairs, "--baselines", "ngram", "--data", str(tmp_path)], "no manifest.json"),
        ([no_head, pairs, "--baselines", "unigram"], "no masked-LM head"),
        ([str(run_dir / "checkpoint"), pairs, "--ngram-order", "7"], "--ngram-order 7: at most 6 for"),
    ]
    os.mkdir(tmp_path / "empty-dir")
    for argv, message in cases:
        assert main(["minimal-pairs", *argv]) == 2, argv
        assert message in one_error_line(capsys, "minimal-pairs")
    with pytest.raises(SystemExit) as stop:                           # argparse's own refusal, same one line
        main(["minimal-pairs", str(run_dir / "checkpoint"), pairs, "--baselines", "bigram"])
    assert stop.value.code == 2 and "'bigram' is not one of" in one_error_line(capsys, "minimal-pairs")
    assert sorted(os.listdir(tmp_path)) == ["empty-dir", "no-head", "p.jsonl"]


def test_attention_heads_reads_the_held_out_text(run_dir, tmp_path, capsys):
    record = tmp_path / "heads.json"
    assert main(["attention-heads", str(run_dir / "checkpoint"), "--sequences", "10", "--json", str(record)]) == 0
    out = capsys.readouterr().out
    assert "query tokens of" in out and len([line for line in out.splitlines() if line[:5].strip().isdigit()]) == 4
    # a random model's heads are near-uniform: no pattern, so none is "recognisable"
    assert "no head puts half its attention on one target\nheads with no clear pattern" in out
    saved = json.load(open(record))
    assert saved["named"] == [] and [b[:2] for b in saved["broad"]] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    means = np.array(saved["means"])
    assert means.shape == (2, 2, len(STATISTICS) + 1) and saved["queries"] > 0
    assert ((means[:, :, :6] >= 0) & (means[:, :, :6] <= 1 + 1e-9)).all()
    assert (means[:, :, 6] <= means[:, :, 7] + 1e-9).all()          # no entropy above the uniform one


def test_attention_heads_refuses_data_of_another_vocabulary(run_dir, tmp_path, capsys):
    """Before: data prepared with another vocabulary ran, and its statistics were over ids that are
    other pieces to the model; refused as the counting baselines refuse it."""
    vocab = list(builtin_vocab())
    vocab[-1], vocab[-2] = vocab[-2], vocab[-1]
    other = small_model(tmp_path / "other", vocab=vocab)
    assert main(["attention-heads", other, "--data", str(run_dir / "data"), "--sequences", "4"]) == 2
    assert "was prepared with another vocabulary than the checkpoint's" in one_error_line(capsys, "attention-heads")
    assert capsys.readouterr().out == ""


def test_probe_prints_every_layer_beside_the_control(run_dir, tmp_path, capsys):
    record = tmp_path / "probe.json"
    assert main(["probe", str(run_dir / "checkpoint"), "--task", "builtin-tagging", "--max-train-examples", "60",
                 "--json", str(record)]) == 0
    out = capsys.readouterr().out
    assert "probing builtin-tagging" in out and "random-init dev" in out
    saved = json.load(open(record))
    assert [r["layer"] for r in saved["layers"]["pretrained"]] == [0, 1, 2]
    assert main(["probe", str(run_dir / "checkpoint"), "--task", "builtin-qa"]) == 2
    assert "a probe classifies sentences or tokens" in one_error_line(capsys, "probe")


def test_probe_refuses_a_length_with_no_room_for_a_word(run_dir, capsys):
    """Before: --max-seq-length 2 made every sentence [CLS] [SEP], all features alike, and each layer
    reported the majority class."""
    args = ["probe", str(run_dir / "checkpoint"), "--task", "builtin-sentence", "--max-train-examples", "20",
            "--no-control", "--max-seq-length"]
    assert main(args + ["2"]) == 2
    assert "max_seq_length 2 leaves no room for a word between [CLS] and [SEP]: sequence classification needs 3 " \
           "at least" in one_error_line(capsys, "probe")
    assert main(args + ["3"]) == 0


# --- outputs: a new file, or one npbert wrote there before; nothing a user made, nothing read -------------

def command_line(command, run_dir, checkpoint, pairs):
    """A short run of each command that writes --json, on `checkpoint`."""
    return {"minimal-pairs": ["minimal-pairs", checkpoint, pairs, "--baselines", "none"],
            "attention-heads": ["attention-heads", checkpoint, "--data", str(run_dir / "data"), "--sequences", "4"],
            "probe": ["probe", checkpoint, "--task", "builtin-sentence", "--max-train-examples", "20",
                      "--no-control"]}[command]


def snapshot(paths) -> dict:
    return {p: (os.lstat(p).st_mode, os.readlink(p) if os.path.islink(p) else
                open(p, "rb").read() if os.path.isfile(p) else None) for p in map(str, paths)}


@pytest.mark.parametrize("command", ["minimal-pairs", "attention-heads", "probe"])
def test_an_output_never_replaces_what_npbert_did_not_write_there(run_dir, tmp_path, capsys, command):
    # before: --json replaced any file (a checkpoint's vocab.txt, the pairs, a user's notes) and
    # turned a FIFO or a link to a device into a regular file
    checkpoint = small_model(tmp_path / "ckpt")
    pairs = write_pairs(tmp_path / "p.jsonl", [GOOD])
    (tmp_path / "notes.txt").write_text("precious\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to(os.devnull)
    argv = command_line(command, run_dir, checkpoint, pairs)
    targets = [(tmp_path / "notes.txt", "exists and was not written by npbert: not overwritten"),
               (tmp_path / "ckpt" / "vocab.txt", f"the command reads {checkpoint}"),
               (tmp_path / "ckpt" / "config.json", f"the command reads {checkpoint}"),
               (tmp_path / "fifo", "is a FIFO (named pipe), not a regular file"),
               (tmp_path / "null", "is a character device, not a regular file")]
    targets += [(tmp_path / "p.jsonl", f"the command reads {pairs}")] if command == "minimal-pairs" else []
    before = snapshot([tmp_path / "notes.txt", tmp_path / "fifo", tmp_path / "null", pairs,
                       *(tmp_path / "ckpt").iterdir()])
    for target, message in targets:
        code = call_beside_fifos(lambda: main([*argv, "--json", str(target)]), tmp_path / "fifo")
        assert code == 2, target
        assert message in one_error_line(capsys, command), target
    assert snapshot(before) == before


def test_one_file_for_two_outputs_is_refused(run_dir, tmp_path, capsys):
    # before: exit 0, the summary written over the scores
    pairs = write_pairs(tmp_path / "p.jsonl", [GOOD])
    same = str(tmp_path / "out.json")
    assert main(["minimal-pairs", str(run_dir / "checkpoint"), pairs, "--scores", same, "--json", same]) == 2
    assert "--scores and --json are the same file" in one_error_line(capsys, "minimal-pairs")
    assert sorted(os.listdir(tmp_path)) == ["p.jsonl"]


@pytest.mark.parametrize("command", ["minimal-pairs", "attention-heads", "probe"])
def test_a_rerun_replaces_its_own_outputs(run_dir, tmp_path, capsys, command):
    pairs = write_pairs(tmp_path / "p.jsonl", [GOOD])
    argv = command_line(command, run_dir, str(run_dir / "checkpoint"), pairs) + ["--json", str(tmp_path / "r.json")]
    argv += ["--scores", str(tmp_path / "s.jsonl")] if command == "minimal-pairs" else []
    for _ in range(2):
        assert main(argv) == 0, capsys.readouterr().err
    assert json.load(open(tmp_path / "r.json"))


def test_a_fifo_named_as_the_picture_is_refused_unopened(run_dir, tmp_path, capsys):
    # before: opened to see whether npbert drew it, which waits for a writer forever
    os.mkfifo(tmp_path / "f.png")
    argv = ["attention-heads", str(run_dir / "checkpoint"), "--sequences", "4", "--plot", str(tmp_path / "f.png")]
    assert call_beside_fifos(lambda: main(argv), tmp_path / "f.png") == 2
    assert "f.png: it is a FIFO (named pipe), not a regular file" in one_error_line(capsys, "attention-heads")
