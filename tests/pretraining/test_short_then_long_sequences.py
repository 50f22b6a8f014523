"""Short sequences first, then long (--short-seq-length, --short-data, --short-seq-share: the BERT
paper's 90 % of the steps at 128 tokens, then 512): which steps read which data, one schedule and
optimizer over both, a resume at the switch, --budget timing both phases, the corpus prepared
twice with one vocabulary, and the refusals."""
import json
import os

import numpy as np
import pytest

import npbert.pretraining.job as job_module
from npbert.cli import main
from npbert.data.pretraining_data import PretrainingData
from npbert.data.prepare import PrepareOptions, prepare
from npbert.pretraining.recipe import pretrain
from support.pretraining_runs import data_dir, options, quiet, records, train_losses  # noqa: F401 (a fixture)

STEPS, SHARE = 40, 0.75                    # the switch: after step 30
SWITCH = int(SHARE * STEPS)


@pytest.fixture(scope="module")
def short_dir(tmp_path_factory, data_dir):  # noqa: F811 (the fixture)
    """data_dir's corpus again at 16 tokens an instance, with data_dir's vocabulary."""
    out = str(tmp_path_factory.mktemp("short") / "builtin-16")
    prepare(PrepareOptions(corpus="builtin", out=out, max_documents=24, dupe_factor=1, max_seq_length=16, seed=3,
                           vocab=os.path.join(data_dir, "vocab.txt")), log=quiet)
    return out


def two_phase(tmp_path, data_dir, short_dir, name="run", **kw):  # noqa: F811
    return options(tmp_path / name, data_dir, **{"steps": STEPS, "short_data": short_dir, "short_seq_share": SHARE,
                                                 **kw})


def params_of(out):
    from npbert.checkpoint import load_pretrained
    return load_pretrained(os.path.join(out, "checkpoint")).params


def same_params(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def batches_read(monkeypatch, opts):
    """The input_ids of every training step of a run of opts, in order (the training step's
    pretraining_forward watched, not replaced; evaluation runs another function)."""
    seen, forward = [], job_module.pretraining_forward

    def watched(params, config, **batch):
        seen.append(batch["input_ids"])
        return forward(params, config, **batch)
    monkeypatch.setattr(job_module, "pretraining_forward", watched)
    pretrain(opts, log=quiet)
    return seen


def epochs_of(data, batch_size, seed, count):
    """The first `count` batches' input_ids of data, epoch after epoch from epoch 0."""
    out, epoch = [], 0
    while len(out) < count:
        out += [b["input_ids"] for b in data.batches(batch_size, seed, epoch)]
        epoch += 1
    return out[:count]


def test_the_first_share_of_the_steps_reads_the_short_instances_and_the_rest_the_long_from_their_first_epoch(
        tmp_path, data_dir, short_dir, monkeypatch):  # noqa: F811
    opts = two_phase(tmp_path, data_dir, short_dir, save_every=0)
    seen = batches_read(monkeypatch, opts)
    assert len(seen) == STEPS
    short, long = PretrainingData(short_dir), PretrainingData(data_dir)
    assert SWITCH > short.num_batches(opts.batch_size)                    # the short phase crosses an epoch
    expected = epochs_of(short, opts.batch_size, opts.seed, SWITCH) + epochs_of(long, opts.batch_size, opts.seed,
                                                                                STEPS - SWITCH)
    assert all(np.array_equal(a, b) for a, b in zip(seen, expected))
    assert max(b.shape[1] for b in seen[:SWITCH]) <= 16 < max(b.shape[1] for b in seen[SWITCH:])
    lrs = [r["lr"] for r in records(opts.out, "train")]                    # one schedule over both phases
    from npbert.pretraining.recipe import pretraining_schedule
    assert lrs == [pretraining_schedule(opts).lr(i) for i in range(STEPS)]


@pytest.mark.parametrize("cut", [SWITCH - 1, SWITCH, SWITCH + 1])
def test_a_run_stopped_next_to_the_switch_resumes_to_the_bit(tmp_path, data_dir, short_dir, cut):  # noqa: F811
    whole = two_phase(tmp_path, data_dir, short_dir, "whole")
    pretrain(whole, log=quiet)
    cut_run = two_phase(tmp_path, data_dir, short_dir, "cut", stop_after=cut)
    assert pretrain(cut_run, log=quiet)["stopped"]
    pretrain(two_phase(tmp_path, data_dir, short_dir, "cut"), resume=True, log=quiet)
    assert train_losses(whole.out) == train_losses(cut_run.out)
    assert same_params(params_of(whole.out), params_of(cut_run.out))


@pytest.mark.parametrize("new_positions", ["copied", "random"])
def test_the_two_phases_are_the_short_run_continued_on_the_long_data_from_its_first_batch(
        tmp_path, data_dir, short_dir, new_positions):  # noqa: F811
    """What docs/hour_recipe.md's two-phase runs did by hand: --data SHORT --stop-after the switch;
    then (copied) the position embeddings 16..31 set to copies of 0..15 in the saved model, the
    run's data made the long instances (their SHA-256 pinned instead, the data position at epoch 0,
    batch 0) and resumed. The options give the same model to the bit."""
    from npbert import safetensors
    from npbert.atomic import path_sha256
    both = two_phase(tmp_path, data_dir, short_dir, "both", new_positions=new_positions)
    pretrain(both, log=quiet)
    by_hand = options(tmp_path / "by-hand", short_dir, steps=STEPS, stop_after=SWITCH)
    assert pretrain(by_hand, log=quiet)["stopped"]
    checkpoint = os.path.join(by_hand.out, "checkpoint")
    if new_positions == "copied":
        model = os.path.join(checkpoint, "model.safetensors")
        tensors = dict(safetensors.load_file(model))
        positions = tensors["bert.embeddings.position_embeddings.weight"].copy()
        positions[16:32] = positions[0:16]
        safetensors.save_file({**tensors, "bert.embeddings.position_embeddings.weight": positions}, model,
                              metadata=safetensors.load_metadata(model))
    state_file = os.path.join(checkpoint, "training_state.json")
    with open(state_file) as f:
        state = json.load(f)
    state["options"]["data"] = os.path.abspath(data_dir)
    state["extra"]["inputs"] = {os.path.abspath(data_dir): path_sha256(data_dir)}
    state["position"].update(epoch=0, batch=0)
    with open(state_file, "w") as f:
        json.dump(state, f)
    pretrain(options(tmp_path / "by-hand", data_dir), resume=True, log=quiet)
    assert [l for _, l in train_losses(both.out)] == [l for _, l in train_losses(by_hand.out)]
    assert same_params(params_of(both.out), params_of(by_hand.out))


def test_the_new_positions_start_as_copies_of_the_first_ones(tmp_path, data_dir, short_dir):  # noqa: F811
    """Stopped at the switch, the copied positions equal the first ones exactly; left random, they
    are as they were (never trained: weight decay alone has moved them)."""
    rows = {}
    for new in ("copied", "random"):
        run = two_phase(tmp_path, data_dir, short_dir, new, new_positions=new, stop_after=SWITCH)
        pretrain(run, log=quiet)
        rows[new] = params_of(run.out)["bert.embeddings.position_embeddings.weight"]
    copied, random = rows["copied"], rows["random"]
    assert np.array_equal(copied[16:32], copied[:16]) and np.array_equal(copied[:16], random[:16])
    assert np.array_equal(copied[32:], random[32:])                     # past the long length: untouched
    assert not np.array_equal(random[16:32], random[:16])


def test_a_budget_times_both_phases_and_its_step_count_remakes_the_run(tmp_path, data_dir, short_dir):  # noqa: F811
    budgeted = two_phase(tmp_path, data_dir, short_dir, "budget", steps=None, budget=0.25, save_every=0)
    r = pretrain(budgeted, log=quiet)
    [plan] = records(budgeted.out, "budget")
    assert r["step"] == plan["steps"] >= 1
    again = two_phase(tmp_path, data_dir, short_dir, "steps", steps=plan["steps"], save_every=0)
    pretrain(again, log=quiet)
    assert train_losses(budgeted.out) == train_losses(again.out)
    assert same_params(params_of(budgeted.out), params_of(again.out))


def test_a_corpus_is_prepared_again_at_the_short_length_with_the_long_datas_vocabulary(tmp_path):
    out = tmp_path / "run"
    argv = ["pretrain", "--corpus", "builtin", "--max-documents", "24", "--dupe-factor", "1", "--out", str(out),
            "--short-seq-length", "16", "--steps", "12", "--batch-size", "8", "--log-every", "4",
            "--eval-every", "6", "--eval-batches", "1"]
    assert main(argv + ["--stop-after", "5"]) == 0
    long, short = PretrainingData(str(out / "data")), PretrainingData(str(out / "data-short"))
    assert (long.max_seq_length, short.max_seq_length) == (64, 16)
    assert short.manifest["vocab_sha256"] == long.manifest["vocab_sha256"]
    with open(out / "checkpoint" / "training_state.json") as f:
        state = json.load(f)
    assert sorted(state["extra"]["inputs"]) == [str(out / "data"), str(out / "data-short")]   # both pinned
    assert state["options"]["short_seq_share"] == 0.9                                        # the default, recorded
    assert main(["pretrain", "--out", str(out), "--resume"]) == 0
    assert records(str(out), "final")


@pytest.mark.parametrize("extra, said", [
    (["--corpus", "builtin", "--short-data", "{short}"], "--short-data goes with --data"),
    (["--data", "{data}", "--short-seq-length", "16"], "--short-seq-length prepares the corpus at that length, and "
                                                      "--data is prepared already"),
    (["--data", "{data}", "--short-seq-share", "0.5"], "--short-seq-share without short instances"),
    (["--corpus", "builtin", "--short-seq-length", "64"], "--short-seq-length 64 is not shorter than "
                                                         "--max-seq-length 64 (the default for this corpus)"),
    (["--data", "{data}", "--short-data", "{data}"], "not fewer than"),
])
def test_short_phase_options_that_cannot_work_are_refused_in_one_line_before_anything_is_written(
        tmp_path, data_dir, short_dir, capsys, extra, said):  # noqa: F811
    out = tmp_path / "run"
    argv = ["pretrain", "--out", str(out), "--steps", "4"] + [a.format(data=data_dir, short=short_dir) for a in extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0]
    assert not out.exists()


def test_short_instances_of_another_vocabulary_are_refused(tmp_path, data_dir, capsys):  # noqa: F811
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(f"the {w} sat on a mat.\nit was a {w} day." for w in
                                  ("cat", "dog", "cow", "hen", "fox", "owl", "elk", "yak")) + "\n")
    other = str(tmp_path / "other")
    prepare(PrepareOptions(corpus=str(corpus), out=other, vocab_size=40, max_seq_length=16), log=quiet)
    out = tmp_path / "run"
    assert main(["pretrain", "--data", data_dir, "--short-data", other, "--out", str(out), "--steps", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vocabulary SHA-256" in err[0] and "cannot be the two phases of one run" in err[0]
    assert not out.exists()
