"""The defaults that depend on the corpus: the built-in stories keep the default run's recipe
(NSP, peak lr 2e-3, 25 % warm-up), any other corpus gets the hour recipe (masked LM only, peak
lr 1e-3, 6 % warm-up; docs/hour_recipe.md); what is given wins, and a resumed run keeps what it
was started with."""
import json
import os

import numpy as np

from npbert.cli import main
from npbert.pretraining.pretrain_options import BUILTIN_RECIPE, CORPUS_RECIPE
from support.pretraining_runs import data_dir, options, pretrain, quiet, saved_options  # noqa: F401 (a fixture)

WORDS = "the a cat dog sat ran on under mat log and then it was big small red".split()


def text_corpus(path, documents=30, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            for _ in range(int(rng.integers(3, 7))):
                f.write(" ".join(rng.choice(WORDS, size=int(rng.integers(4, 9)))) + " .\n")
            f.write("\n")
    return str(path)


def run(tmp_path, name, *flags):
    out = str(tmp_path / name)
    corpus = text_corpus(tmp_path / "corpus.txt")
    assert main(["pretrain", "--corpus", corpus, "--vocab-size", "60", "--out", out, "--steps", "4", "--batch-size", "4",
                 "--eval-batches", "1", "--backend", "numpy",
                 *([] if "--max-seq-length" in flags else ["--max-seq-length", "32"]), *flags]) == 0
    return saved_options(out)


def test_a_corpus_other_than_builtin_gets_the_hour_recipe(tmp_path, capsys):
    o = run(tmp_path, "run", "--max-seq-length", "128")
    assert {k: o[k] for k in CORPUS_RECIPE} == CORPUS_RECIPE
    assert o["short_seq_share"] == 0.9 and os.path.isdir(tmp_path / "run" / "data-short")
    said = capsys.readouterr().out
    assert "peak lr 0.001, warmup 0; masked LM only (no NSP; --nsp turns it on)" in said
    assert "of up to 64 tokens" in said and "the rest on 128" in said
    assert "held-out NSP accuracy" not in said


def test_the_short_phase_is_left_out_where_it_cannot_be_short_or_the_data_are_prepared_already(tmp_path, data_dir):
    assert run(tmp_path, "t32")["short_seq_length"] is None                        # --max-seq-length 32: not longer
    assert run(tmp_path, "given", "--max-seq-length", "128", "--short-seq-length", "32")["short_seq_length"] == 32
    opts = options(tmp_path, data_dir, steps=3, learning_rate=None)               # --data: none unless --short-data
    pretrain(opts, log=quiet)
    assert saved_options(opts.out)["short_seq_length"] is None


def test_what_is_given_wins_over_the_corpus_defaults(tmp_path, capsys):
    o = run(tmp_path, "run", "--nsp", "--learning-rate", "5e-4", "--warmup-steps", "2")
    assert (o["no_nsp"], o["learning_rate"], o["warmup_steps"], o["warmup_proportion"]) == (False, 5e-4, 2, None)
    assert "held-out NSP accuracy" in capsys.readouterr().out


def test_the_builtin_corpus_keeps_the_default_runs_recipe(tmp_path, data_dir):
    opts = options(tmp_path, data_dir, steps=3, learning_rate=None)
    pretrain(opts, log=quiet)
    o = saved_options(opts.out)
    assert {k: o[k] for k in BUILTIN_RECIPE} == BUILTIN_RECIPE


def test_a_run_started_before_the_warmup_share_existed_resumes_on_its_25_percent(tmp_path, data_dir):
    full = options(tmp_path / "a", data_dir, steps=12, warmup_proportion=0.25)
    pretrain(full, log=quiet)
    stopped = options(tmp_path / "b", data_dir, steps=12, warmup_proportion=0.25, stop_after=5)
    pretrain(stopped, log=quiet)
    state_file = os.path.join(stopped.out, "checkpoint", "training_state.json")
    with open(state_file) as f:
        state = json.load(f)
    for name in ("warmup_proportion", "budget", "instances"):               # as an older npbert saved them
        del state["options"][name]
    with open(state_file, "w") as f:
        json.dump(state, f)
    pretrain(options(tmp_path / "b", data_dir, steps=12), resume=True, log=quiet)
    with open(os.path.join(full.out, "metrics.jsonl")) as a, open(os.path.join(stopped.out, "metrics.jsonl")) as b:
        lrs = [[r["lr"] for r in map(json.loads, f) if r["kind"] == "train"] for f in (a, b)]
    assert lrs[0] == lrs[1] and len(lrs[0]) == 12
