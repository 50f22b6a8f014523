"""Masked LM only (--no-nsp) and the mask mix."""
import dataclasses
import json
import os

import numpy as np

from npbert.checkpoint import load_pretrained
from npbert.cli import main
from npbert.data.prepare import prepare
from npbert.pretraining.recipe import PretrainOptions, pretrain
from support.pretraining_runs import (SMALL, data_dir, options, quiet, records,  # noqa: F401  (data_dir: a fixture)
                              saved_options, train_losses)


# --- masked LM only (--no-nsp) and the mask mix ----------------------------------------------------

def test_without_nsp_the_nsp_head_and_pooler_never_change_and_nothing_reports_nsp(tmp_path, data_dir, monkeypatch):
    """A large weight decay would move any frozen weight it touched; the NSP labels, counted in
    no loss, give the frozen parameters zero gradients; no NSP figure anywhere."""
    from npbert.model_params import NSP_ONLY_PARAMS
    from npbert.optim import AdamW
    from npbert.pretraining.recipe import load_prepared, new_checkpoint
    seen, real = [], AdamW.step

    def step(self, params, grads, lr):
        seen.append((set(self.m), {k: grads[k].copy() for k in NSP_ONLY_PARAMS}))
        return real(self, params, grads, lr)
    monkeypatch.setattr(AdamW, "step", step)
    opts = options(tmp_path, data_dir, no_nsp=True, steps=12, eval_every=6, weight_decay=0.5, hidden_dropout_prob=0.1)
    said = []
    r = pretrain(opts, log=said.append)
    init = new_checkpoint(opts, None, load_prepared(data_dir)[0], quiet).params
    trained = load_pretrained(r["checkpoint"]).params
    assert sorted(trained) == sorted(init)                              # the heads stay in the checkpoint
    assert all(np.array_equal(trained[k], init[k]) for k in NSP_ONLY_PARAMS)
    # every other parameter moves, but for the attention key biases: their gradient is 0 in exact
    # arithmetic (softmax ignores a shift of a row of scores), and whether Adam moves them by its
    # rounding noise or not at all depends on the CPU's SIMD width, so no verdict hangs on them
    moving = [k for k in trained if k not in NSP_ONLY_PARAMS and not k.endswith("attention.self.key.bias")]
    assert all(not np.array_equal(trained[k], init[k]) for k in moving)
    assert len(seen) == 12 and all(trained_names == set(trained) - NSP_ONLY_PARAMS for trained_names, _ in seen)
    assert all(not g.any() for _, grads in seen for g in grads.values())
    with np.load(os.path.join(r["checkpoint"], "training_state.npz")) as moments:
        assert not any(f"{kind}/{k}" in moments for k in NSP_ONLY_PARAMS for kind in "mv")   # no moments
    with open(os.path.join(r["checkpoint"], "training_state.json")) as f:
        assert sorted(json.load(f)["frozen"]) == sorted(NSP_ONLY_PARAMS)
    assert saved_options(opts.out)["no_nsp"] is True
    logged = records(opts.out, "baseline") + records(opts.out, "train") + records(opts.out, "eval")
    assert logged and not any(field.startswith("nsp") for rec in logged for field in rec)
    assert all(rec["loss"] == rec["mlm_loss"] for rec in records(opts.out, "train"))
    assert not any(k.startswith(("nsp", "baseline_nsp")) for k in r) and 0 <= r["mlm_acc"] <= 1
    steps = [line for line in said if line.startswith("step ")]
    assert len(steps) == 12 and all("| nsp off |" in line for line in steps)
    assert not any("nsp acc" in line or "NSP accuracy " in line for line in said)
    assert any(line.startswith("no NSP accuracy: pretrained without next-sentence prediction") for line in said)


def test_with_and_without_nsp_the_masked_lm_sees_the_same_batches(tmp_path, data_dir):
    """Same seed: the same initial weights, batches, masks and dropout draws, so the first step's
    MLM loss is the same to the bit; only the NSP term of the loss is gone. evaluate(nsp=False)
    gives the MLM figures of evaluate() and no NSP ones."""
    from npbert.data.pretraining_data import PretrainingData
    from npbert.pretraining.recipe import evaluate
    on, off = (options(tmp_path / name, data_dir, steps=3, no_nsp=name == "off", hidden_dropout_prob=0.1)
               for name in ("on", "off"))
    pretrain(on, log=quiet)
    r = pretrain(off, log=quiet)
    first_on, first_off = records(on.out, "train")[0], records(off.out, "train")[0]
    assert first_on["mlm_loss"] == first_off["mlm_loss"]
    # the loss is the float32 sum of the two float32 terms (a Python float sum rounds otherwise)
    assert first_off["loss"] == first_off["mlm_loss"]
    assert first_on["loss"] == float(np.float32(first_on["mlm_loss"]) + np.float32(first_on["nsp_loss"]))
    assert records(on.out, "train")[1]["mlm_loss"] != records(off.out, "train")[1]["mlm_loss"]  # NSP moved the encoder
    checkpoint = load_pretrained(r["checkpoint"])
    heldout = PretrainingData(data_dir, "heldout")
    both = evaluate(checkpoint.params, checkpoint.config, heldout, 8)
    assert evaluate(checkpoint.params, checkpoint.config, heldout, 8, nsp=False) == \
        dict(mlm_loss=both["mlm_loss"], mlm_acc=both["mlm_acc"])


def test_no_nsp_resumes_bit_exactly_without_being_typed_again(tmp_path, data_dir):
    full = options(tmp_path / "a", data_dir, no_nsp=True, steps=12)
    pretrain(full, log=quiet)
    stopped = options(tmp_path / "b", data_dir, no_nsp=True, steps=12, stop_after=5)
    pretrain(stopped, log=quiet)
    pretrain(options(tmp_path / "b", data_dir, steps=12), resume=True, log=quiet)    # no_nsp from the checkpoint
    assert train_losses(full.out) == train_losses(stopped.out)
    a, b = (load_pretrained(os.path.join(o.out, "checkpoint")).params for o in (full, stopped))
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_checkpoint_from_before_these_options_resumes_with_nsp_and_the_data_mix(tmp_path, data_dir):
    full = options(tmp_path / "a", data_dir, steps=12)
    pretrain(full, log=quiet)
    stopped = options(tmp_path / "b", data_dir, steps=12, stop_after=5)
    pretrain(stopped, log=quiet)
    state_file = os.path.join(stopped.out, "checkpoint", "training_state.json")
    state = json.load(open(state_file))
    assert state["options"].pop("no_nsp") is False and state["options"].pop("mask_mix") == "80/10/10"
    with open(state_file, "w") as f:
        json.dump(state, f)
    pretrain(options(tmp_path / "b", data_dir, steps=12), resume=True, log=quiet)
    assert train_losses(full.out) == train_losses(stopped.out)


def test_the_data_mask_mix_is_recorded_and_another_one_refused_before_anything_is_written(tmp_path, data_dir, capsys):
    out = tmp_path / "run"
    cmd = ["pretrain", "--data", data_dir, "--out", str(out), "--steps", "2", "--batch-size", "4", "--eval-batches", "1"]
    for mix, said in (("100/0/0", f"npbert pretrain: error: {data_dir} was prepared with --mask-mix 80/10/10, not "
                                  "100/0/0: the mix is fixed when the shards are made; prepare the corpus again with "
                                  "`npbert prepare --mask-mix 100/0/0`, or leave --mask-mix out to train on the data's"),
                      ("80/10", "npbert pretrain: error: mask_mix must be three whole percentages MASK/SAME/RND")):
        assert main(cmd + ["--mask-mix", mix]) == 2
        err = capsys.readouterr().err
        assert err.startswith(said) and err.count("\n") == 1, err
        assert not out.exists()
    assert main(cmd) == 0 and saved_options(str(out))["mask_mix"] == "80/10/10"       # the data's, not typed
    assert main(cmd + ["--overwrite", "--mask-mix", "80/10/010"]) == 0               # the same mix, spelt otherwise


def test_a_corpus_is_prepared_with_the_mask_mix_and_the_checkpoint_records_it(tmp_path):
    opts = PretrainOptions(out=str(tmp_path / "run"), corpus="builtin", max_documents=24, max_seq_length=32,
                           dupe_factor=1, mask_mix="0/0/100", preset="tiny", model_overrides=SMALL, steps=2,
                           batch_size=8, eval_batches=1)
    pretrain(opts, log=quiet)
    with open(tmp_path / "run" / "data" / "manifest.json") as f:
        assert json.load(f)["options"]["mask_mix"] == "0/0/100"
    assert saved_options(opts.out)["mask_mix"] == "0/0/100"
    r = pretrain(dataclasses.replace(opts, steps=2), resume=True, log=quiet)        # nothing to do, but it checks
    assert r["step"] == 2


def test_single_sentences_train_masked_lm_only_and_another_kind_is_refused_before_anything_is_written(tmp_path,
                                                                                                      capsys):
    data = str(tmp_path / "sentences")
    assert main(["prepare", "--max-documents", "24", "--dupe-factor", "1", "--max-seq-length", "32", "--out", data,
                 "--instances", "sentences"]) == 0
    capsys.readouterr()
    out = tmp_path / "run"
    cmd = ["pretrain", "--data", data, "--out", str(out), "--steps", "3", "--batch-size", "4", "--eval-batches", "1",
           "--backend", "numpy"]
    assert main(cmd + ["--instances", "pairs"]) == 2
    assert f"{data} was prepared with --instances sentences, not pairs: the kind of instance is fixed" in \
        capsys.readouterr().err and not out.exists()
    assert main(cmd) == 0                                               # no --no-nsp needed: nothing else to do
    said = capsys.readouterr().out
    assert "masked LM only (single sentences have no next sentence)" in said and " sentences): mlm acc " in said
    options = saved_options(str(out))
    assert options["instances"] == "sentences" and options["no_nsp"] is True
    assert "nsp_acc" not in records(str(out), "final")[0]
