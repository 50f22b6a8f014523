"""The pretraining loop: bit-exact resume, atomic checkpoints, clear stops on NaN and Ctrl-C."""
import dataclasses
import json
import os
import signal

import numpy as np
import pytest

from npbert import safetensors
from npbert.checkpoint import load_pretrained
from npbert.cli import build_parser, main
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.pretrain import PretrainOptions, pretrain
from npbert.training.loop import TrainingDiverged

SMALL = dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=64)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A small prepared builtin corpus: ~16 batches of 8 per epoch, so runs cross epochs."""
    out = str(tmp_path_factory.mktemp("data") / "builtin")
    prepare(PrepareOptions(corpus="builtin", out=out, max_documents=24, dupe_factor=1, max_seq_length=32, seed=3),
            log=lambda *a, **k: None)
    return out


def options(tmp_path, data_dir, **kw):
    base = dict(out=str(tmp_path / "run"), data=data_dir, preset="tiny", model_overrides=SMALL, steps=40,
                batch_size=8, learning_rate=3e-3, log_every=1, eval_every=20, eval_batches=2, save_every=7, seed=5)
    base.update(kw)
    return PretrainOptions(**base)


def train_losses(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f) if r["kind"] == "train"]


def baselines(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "baseline"]


def quiet(*args, **kwargs):
    pass


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_resume_is_bit_exact(tmp_path, data_dir, backend_name, monkeypatch):
    """numba on 2 threads: its matmuls are split over the threads (docs/determinism.md: the same
    thread count, the same bits)."""
    from npbert.backend import set_backend
    set_backend(backend_name)
    full = options(tmp_path / "a", data_dir)
    monkeypatch.setenv("NPBERT_NUM_THREADS", "2")
    pretrain(full, log=quiet)
    from npbert.data.pretraining_data import PretrainingData
    assert full.steps * full.batch_size > len(PretrainingData(data_dir)), "the run must cross an epoch boundary"
    stopped = options(tmp_path / "b", data_dir, stop_after=11)
    r = pretrain(stopped, log=quiet)
    assert r["stopped"] and r["step"] == 11
    r = pretrain(options(tmp_path / "b", data_dir, stop_after=23), resume=True, log=quiet)  # a second stop
    assert r["stopped"] and r["step"] == 23
    pretrain(options(tmp_path / "b", data_dir), resume=True, log=quiet)
    assert train_losses(full.out) == train_losses(stopped.out)          # every step's loss, to the bit
    assert baselines(full.out) == baselines(stopped.out) and len(baselines(full.out)) == 1   # not one per resume
    a = load_pretrained(os.path.join(full.out, "checkpoint")).params
    b = load_pretrained(os.path.join(stopped.out, "checkpoint")).params
    assert all(np.array_equal(a[k], b[k]) for k in a)
    for name in ("training_state.npz",):
        za, zb = np.load(os.path.join(full.out, "checkpoint", name)), np.load(os.path.join(stopped.out, "checkpoint", name))
        assert all(np.array_equal(za[k], zb[k]) for k in za.files)


def test_loss_goes_down_and_metrics_are_logged(tmp_path, data_dir):
    r = pretrain(options(tmp_path, data_dir, steps=60, eval_every=30), log=quiet)
    losses = [loss for _, loss in train_losses(r["checkpoint"].rsplit("/", 1)[0])]
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
    records = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    assert {"train", "eval"} <= {rec["kind"] for rec in records}
    assert {"loss", "mlm_acc", "nsp_acc", "lr", "tokens_per_s"} <= set(records[1])
    assert 0 <= r["mlm_acc"] <= 1 and 0 <= r["baseline_mlm_acc"] <= 1
    # the baselines the run ends with are the log's first record, for `npbert plot`
    assert records[0] == dict(kind="baseline", step=0, mlm_acc=r["baseline_mlm_acc"], nsp_acc=r["baseline_nsp_acc"])


def test_existing_output_directory_is_refused_unless_resume_or_overwrite(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    with pytest.raises(NpbertError, match="already exists.*--resume.*--overwrite"):
        pretrain(options(tmp_path, data_dir, steps=2), log=quiet)
    pretrain(options(tmp_path, data_dir, steps=2), overwrite=True, log=quiet)
    with pytest.raises(NpbertError, match="nothing to resume"):
        pretrain(options(tmp_path / "never", data_dir), resume=True, log=quiet)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, data_dir, monkeypatch):
    import npbert.pretrain as pretrain_module
    real = pretrain_module.pretraining_forward
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        out, cache = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 10:                            # the 10th training step
            out["loss"] = np.float32("nan")
        return out, cache
    monkeypatch.setattr(pretrain_module, "pretraining_forward", poisoned)
    with pytest.raises(TrainingDiverged, match="nan at step 10"):
        pretrain(options(tmp_path, data_dir, eval_every=100), log=quiet)
    state = json.load(open(tmp_path / "run" / "checkpoint" / "training_state.json"))
    assert state["position"]["step"] == 7                # the save before the NaN, intact
    load_pretrained(str(tmp_path / "run" / "checkpoint"))


def test_crash_while_saving_keeps_the_previous_checkpoint(tmp_path, data_dir, monkeypatch):
    real = safetensors.save_file
    saves = {"n": 0}

    def crash_on_second_save(tensors, path, metadata=None):
        saves["n"] += 1
        if saves["n"] == 2:
            with open(path, "wb") as f:
                f.write(b"half a file")
            raise OSError("disk full (simulated)")
        return real(tensors, path, metadata)
    monkeypatch.setattr(safetensors, "save_file", crash_on_second_save)
    with pytest.raises(OSError, match="simulated"):
        pretrain(options(tmp_path, data_dir), log=quiet)
    state = json.load(open(tmp_path / "run" / "checkpoint" / "training_state.json"))
    assert state["position"]["step"] == 7
    monkeypatch.setattr(safetensors, "save_file", real)
    r = pretrain(options(tmp_path, data_dir, steps=40), resume=True, log=quiet)   # and it resumes from there
    assert r["step"] == 40


def test_ctrl_c_saves_a_resumable_checkpoint(tmp_path, data_dir):
    def interrupt_at_step_4(line, *a, **k):
        if line.startswith("step     4/"):
            os.kill(os.getpid(), signal.SIGINT)          # what Ctrl-C sends
    r = pretrain(options(tmp_path, data_dir), log=interrupt_at_step_4)
    assert r["stopped"] and r["step"] == 4
    r = pretrain(options(tmp_path, data_dir), resume=True, log=quiet)
    assert not r["stopped"] and r["step"] == 40


def test_data_longer_than_the_model_positions_is_refused_before_the_first_step(tmp_path, data_dir):
    from npbert.errors import DataError
    said = []
    with pytest.raises(DataError, match="up to 32 tokens, more than the tiny preset's max_position_embeddings 16"):
        pretrain(options(tmp_path, data_dir, model_overrides={**SMALL, "max_position_embeddings": 16}), log=said.append)
    assert not any(s.startswith("step") for s in said)


def test_checkpoint_keeps_the_casing_of_its_data(tmp_path):
    """A run on cased data saves a cased tokenizer (tokenizer_config.json), so the checkpoint
    tokenizes new text as its training data was; it used to load as lower-cased."""
    corpus = tmp_path / "cased.txt"
    corpus.write_text("".join(f"The Doctor went to Paris, number {i} .\nShe read a Book there .\n\n"
                              for i in range(40)), encoding="utf-8")
    data = str(tmp_path / "data")
    prepare(PrepareOptions(corpus=str(corpus), out=data, vocab_size=120, max_seq_length=32, do_lower_case=False),
            log=quiet)
    pretrain(options(tmp_path, data, steps=2, save_every=1), log=quiet)
    tokenizer = load_pretrained(str(tmp_path / "run" / "checkpoint")).tokenizer
    assert tokenizer.do_lower_case is False and "Paris" in tokenizer.tokenize("The Doctor went to Paris")


def test_cli_pretrain_then_fill_mask(tmp_path, data_dir, capsys):
    out = str(tmp_path / "cli")
    assert main(["pretrain", "--data", data_dir, "--out", out, "--steps", "3", "--batch-size", "4",
                 "--log-every", "1", "--eval-batches", "1"]) == 0
    text = capsys.readouterr().out
    assert "step     3/3" in text and "held-out MLM accuracy" in text and "model saved to" in text
    assert main(["pretrain", "--data", data_dir, "--out", out, "--steps", "3"]) == 2   # exists: refused
    assert "already exists" in capsys.readouterr().err
    assert main(["fill-mask", os.path.join(out, "checkpoint"), "the [MASK] is here .", "--top-k", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  [MASK] 1:") and len(lines[1].split()) == 2 + 2 * 3


def test_training_commands_default_to_the_numba_backend_unless_npbert_backend_says(monkeypatch):
    from npbert.cli import build_parser
    monkeypatch.delenv("NPBERT_BACKEND", raising=False)
    for argv in (["pretrain"], ["finetune", "--task", "builtin-sentence"]):
        assert build_parser().parse_args(argv).backend == "numba"
        assert build_parser().parse_args(argv + ["--backend", "numpy"]).backend == "numpy"
    monkeypatch.setenv("NPBERT_BACKEND", "numpy")
    assert build_parser().parse_args(["pretrain"]).backend == "numpy"


# --- pretraining a checkpoint further (--model) ----------------------------------------------------

@pytest.fixture(scope="module")
def first_run(tmp_path_factory, data_dir):
    """A short pretraining run whose checkpoint the tests below start from."""
    opts = options(tmp_path_factory.mktemp("first"), data_dir, steps=10)
    final = pretrain(opts, log=quiet)
    return os.path.join(opts.out, "checkpoint"), final


@pytest.fixture(scope="module")
def first_run_backend(first_run):
    """The backend first_run ran on: the one in force in Python (numpy, or NPBERT_BACKEND)."""
    from npbert.backend import get_backend
    return get_backend()


def test_model_starts_from_the_checkpoint_weights(tmp_path, data_dir, first_run, first_run_backend, capsys):
    """At learning rate 0 a run from --model keeps the checkpoint's weights to the bit, so its
    held-out scores are the first run's."""
    ckpt, final = first_run
    out = str(tmp_path / "more")
    # the backend that made first_run: bit-exact scores are a promise for one backend only (the
    # CLI's own default is numba; float32 sums differ in the last bits between the two)
    assert main(["pretrain", "--data", data_dir, "--model", ckpt, "--out", out, "--steps", "2", "--batch-size", "8",
                 "--learning-rate", "0", "--log-every", "1", "--eval-batches", "2",
                 "--backend", first_run_backend]) == 0
    assert f"from {ckpt}: its weights\n" in capsys.readouterr().out      # nothing new, nothing dropped
    a, b = load_pretrained(ckpt).params, load_pretrained(os.path.join(out, "checkpoint")).params
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with open(os.path.join(out, "metrics.jsonl")) as f:
        last = [r for r in map(json.loads, f) if r["kind"] == "eval"][-1]
    assert last["mlm_acc"] == final["mlm_acc"] and last["nsp_loss"] == final["nsp_loss"]


def test_model_resumes_bit_exactly(tmp_path, data_dir, first_run):
    ckpt, _ = first_run
    kw = dict(model=ckpt, model_overrides=None, steps=12)
    pretrain(options(tmp_path / "a", data_dir, **kw), log=quiet)
    assert pretrain(options(tmp_path / "b", data_dir, stop_after=5, **kw), log=quiet)["stopped"]
    pretrain(options(tmp_path / "b", data_dir, **kw), resume=True, log=quiet)
    assert train_losses(str(tmp_path / "a" / "run")) == train_losses(str(tmp_path / "b" / "run"))


def test_model_without_pretraining_heads_gets_new_ones(tmp_path, data_dir, first_run):
    """A Hugging Face BertModel (or a fine-tuned checkpoint): the encoder is kept, the MLM and NSP
    heads start random, a task head is left out, and the run saves a pretraining config."""
    from npbert.checkpoint import save_pretrained
    from npbert.heads.params import finetuned_config
    from npbert.heads.registry import head_of
    ckpt, _ = first_run
    loaded = load_pretrained(ckpt)
    encoder = {k: v for k, v in loaded.params.items() if k.startswith("bert.")}
    head = {"classifier.weight": np.zeros((2, SMALL["hidden_size"]), np.float32),
            "classifier.bias": np.zeros(2, np.float32)}
    save_pretrained(str(tmp_path / "ft"), finetuned_config(loaded.config, head_of("sequence_classification"), ["a", "b"]),
                    {**encoder, **head}, loaded.tokenizer)
    said = []
    pretrain(options(tmp_path, data_dir, model=str(tmp_path / "ft"), model_overrides=None, steps=2,
                     learning_rate=0.0), log=said.append)
    line = next(s for s in said if s.startswith("from "))
    assert "new (random): cls.predictions.bias" in line and "cls.seq_relationship.weight" in line
    assert line.split("; not used: ")[1] in ("classifier.bias, classifier.weight", "classifier.weight, classifier.bias")
    assert "bert." not in line
    run = load_pretrained(os.path.join(tmp_path, "run", "checkpoint"))
    assert all(np.array_equal(run.params[k], v) for k, v in encoder.items())
    assert run.config.extra["architectures"] == ["BertForPreTraining"] and "id2label" not in run.config.extra


def test_model_that_does_not_fit_the_data_is_refused(tmp_path, data_dir, first_run):
    from npbert.checkpoint import save_pretrained
    from npbert.errors import DataError
    ckpt, _ = first_run
    loaded = load_pretrained(ckpt)
    tokens = list(loaded.tokenizer.vocab)
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]                 # same size, two ids swapped
    save_pretrained(str(tmp_path / "swapped"), loaded.config, loaded.params, tokens)
    with pytest.raises(DataError, match="prepared with a different vocabulary"):
        pretrain(options(tmp_path / "a", data_dir, model=str(tmp_path / "swapped"), model_overrides=None), log=quiet)
    from npbert.model import init_params
    short = dataclasses.replace(loaded.config, max_position_embeddings=16)
    save_pretrained(str(tmp_path / "short"), short, init_params(short, np.random.default_rng(0)), loaded.tokenizer)
    with pytest.raises(DataError, match="up to 32 tokens, more than .* max_position_embeddings 16"):
        pretrain(options(tmp_path / "b", data_dir, model=str(tmp_path / "short"), model_overrides=None), log=quiet)
    loaded.tokenizer.basic.do_lower_case = False                   # a cased model on lower-cased data
    save_pretrained(str(tmp_path / "cased"), loaded.config, loaded.params, loaded.tokenizer)
    with pytest.raises(DataError, match="prepared lower-cased, but .*tokenizer is cased; .* --cased"):
        pretrain(options(tmp_path / "d", data_dir, model=str(tmp_path / "cased"), model_overrides=None), log=quiet)
    with pytest.raises(NpbertError, match="model_overrides cannot change it"):
        pretrain(options(tmp_path / "c", data_dir, model=ckpt), log=quiet)
    os.remove(os.path.join(tmp_path, "short", "vocab.txt"))
    with pytest.raises(CheckpointError, match="has no vocab.txt, so there is no telling"):
        pretrain(options(tmp_path / "e", data_dir, model=str(tmp_path / "short"), model_overrides=None), log=quiet)


def test_model_prepares_a_corpus_with_its_own_vocabulary_and_casing(tmp_path, first_run):
    """--corpus without --vocab: the checkpoint's vocab.txt, not a newly trained one its weights
    would not fit; and its casing, so a cased checkpoint is not refused its own corpus."""
    from npbert.checkpoint import save_pretrained
    from npbert.data.pretraining_data import PretrainingData
    from npbert.tokenizer import load_vocab
    ckpt, _ = first_run
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"the doctor went to the city number {i} .\nshe read a book there .\n\n"
                              for i in range(40)), encoding="utf-8")
    loaded = load_pretrained(ckpt)
    loaded.tokenizer.basic.do_lower_case = False
    save_pretrained(str(tmp_path / "cased"), loaded.config, loaded.params, loaded.tokenizer)
    for model, lower in ((ckpt, True), (str(tmp_path / "cased"), False)):
        out = tmp_path / f"run-{lower}"
        pretrain(PretrainOptions(out=str(out), corpus=str(corpus), model=model, max_seq_length=32, steps=2,
                                 batch_size=4, eval_batches=1), log=quiet)
        assert load_vocab(out / "data" / "vocab.txt") == load_vocab(os.path.join(ckpt, "vocab.txt"))
        assert PretrainingData(str(out / "data")).do_lower_case is lower
        assert load_pretrained(str(out / "checkpoint")).tokenizer.do_lower_case is lower
    args = build_parser().parse_args(["pretrain", "--cased"])
    assert args.do_lower_case is False and build_parser().parse_args(["pretrain"]).do_lower_case is None


# --- what the loop does each step ----------------------------------------------------------------

def spy_on_updates(monkeypatch):
    """Record (learning rate, global norm of the gradients) of every AdamW step."""
    from npbert.optim import AdamW, global_norm
    seen, real = [], AdamW.step

    def step(self, params, grads, lr):
        seen.append((lr, global_norm(grads)))
        return real(self, params, grads, lr)
    monkeypatch.setattr(AdamW, "step", step)
    return seen


def test_every_step_uses_the_schedule_and_clipped_gradients(tmp_path, data_dir, monkeypatch):
    """The learning rate of step i is warmup then linear decay, written out here on its own (not
    npbert's function), and the optimizer sees gradients clipped to --max-grad-norm: a loop that
    skipped clipping or used a constant rate would pass the loss-goes-down tests."""
    seen = spy_on_updates(monkeypatch)
    steps, warmup, peak, max_norm = 12, 4, 2e-3, 0.05
    pretrain(options(tmp_path, data_dir, steps=steps, warmup_steps=warmup, learning_rate=peak, max_grad_norm=max_norm),
             log=quiet)
    expected = [peak * i / warmup if i < warmup else peak * (steps - i) / (steps - warmup) for i in range(steps)]
    assert [lr for lr, _ in seen] == pytest.approx(expected, rel=1e-12, abs=0)
    norms = [norm for _, norm in seen]
    assert all(abs(n - max_norm) < 1e-5 * max_norm for n in norms), norms   # every raw norm is > 0.05 here
    logged = [r for r in map(json.loads, open(tmp_path / "run" / "metrics.jsonl")) if r["kind"] == "train"]
    assert [r["lr"] for r in logged] == pytest.approx(expected, rel=1e-12, abs=0)
    assert all(r["grad_norm"] > max_norm for r in logged)                  # logged: the norm before clipping


def test_a_non_finite_gradient_stops_before_the_update(tmp_path, data_dir, monkeypatch):
    import npbert.pretrain as pretrain_module
    real = pretrain_module.pretraining_backward

    def poisoned(cache):
        grads = real(cache)
        grads["bert.pooler.dense.bias"][0] = np.inf
        return grads
    monkeypatch.setattr(pretrain_module, "pretraining_backward", poisoned)
    seen = spy_on_updates(monkeypatch)
    with pytest.raises(TrainingDiverged, match="gradient norm is (inf|nan) at step 1"):
        pretrain(options(tmp_path, data_dir), log=quiet)
    assert seen == []


def test_nsp_is_reported_against_the_majority_class_of_the_heldout_labels(tmp_path, data_dir):
    from npbert.data.pretraining_data import PretrainingData
    said = []
    r = pretrain(options(tmp_path, data_dir, steps=2), log=said.append)
    labels = PretrainingData(data_dir, "heldout").arrays["next_sentence_labels"]
    notnext = labels.mean()
    assert r["baseline_nsp_acc"] == pytest.approx(max(notnext, 1 - notnext))
    line = next(s for s in said if s.startswith("held-out NSP accuracy"))
    assert f"majority-class baseline {max(notnext, 1 - notnext):.3f}" in line and "chance" not in line


def test_rising_heldout_loss_is_warned_about_once(tmp_path, data_dir, monkeypatch):
    import npbert.pretrain as pretrain_module
    real, losses = pretrain_module.evaluate, iter([4.1, 3.9, 4.3, 5.0, 6.2, 7.7, 9.1, 9.5, 9.9])

    def rising(*args, **kwargs):
        return dict(real(*args, **kwargs), mlm_loss=next(losses))
    monkeypatch.setattr(pretrain_module, "evaluate", rising)
    said = []
    pretrain(options(tmp_path, data_dir, steps=16, eval_every=2), log=said.append)
    warnings = [s for s in said if "warning" in s]
    assert len(warnings) == 1 and "risen at 3 evaluations in a row (lowest 3.900 at step 4, now 6.200)" in warnings[0]
    assert said.index(warnings[0]) > said.index(next(s for s in said if s.startswith("step    10/")))


# --- the run directory: nothing a user made is lost -------------------------------------------------

def saved_step(out):
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        return json.load(f)["position"]["step"]


@pytest.fixture
def trained(tmp_path, data_dir):
    """A run that saved, at step 7."""
    pretrain(options(tmp_path, data_dir, steps=7), log=quiet)
    return str(tmp_path / "run")


def test_overwrite_with_bad_input_keeps_the_earlier_run(tmp_path, data_dir, trained):
    before = sorted(os.listdir(trained))
    with pytest.raises(DataError, match="corpus file not found: typo.txt"):
        pretrain(options(tmp_path, data_dir, data=None, corpus="typo.txt"), overwrite=True, log=quiet)
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match="not UTF-8"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(tmp_path / "binary.txt")), overwrite=True,
                 log=quiet)
    (tmp_path / "one.txt").write_text("one short document .\nwith two sentences .\n")
    said = []
    with pytest.raises(DataError, match="document"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(tmp_path / "one.txt")), overwrite=True,
                 log=said.append)
    assert f"the earlier run in {trained} is back as it was" in said
    with pytest.raises(NpbertError, match="--steps must be a positive integer"):
        pretrain(options(tmp_path, data_dir, steps=0), overwrite=True, log=quiet)
    assert sorted(os.listdir(trained)) == before and saved_step(trained) == 7
    assert [e for e in os.listdir(tmp_path) if e.startswith(".")] == []


def test_overwrite_replaces_the_run_at_its_first_save(tmp_path, data_dir, trained, monkeypatch):
    import npbert.training.run_dir as run_dir
    seen = {}
    real = run_dir.RunDir.saved

    def saved(self):
        seen.setdefault("aside before the first save", self.aside is not None and os.path.isdir(self.aside))
        real(self)
    monkeypatch.setattr(run_dir.RunDir, "saved", saved)
    pretrain(options(tmp_path, data_dir, steps=3, save_every=1), overwrite=True, log=quiet)
    assert seen["aside before the first save"] and saved_step(trained) == 3
    assert [e for e in os.listdir(tmp_path) if e.startswith(".")] == []


def test_overwrite_refuses_a_directory_that_is_not_a_run(tmp_path, data_dir):
    thesis = tmp_path / "run" / "thesis.txt"
    thesis.parent.mkdir()
    thesis.write_text("four years of work")
    for overwrite in (False, True):
        with pytest.raises(NpbertError, match="is not an npbert run .* will not write into it or delete it"):
            pretrain(options(tmp_path, data_dir), overwrite=overwrite, log=quiet)
    assert thesis.read_text() == "four years of work" and os.listdir(thesis.parent) == ["thesis.txt"]


def test_out_that_is_a_file_is_refused(tmp_path, data_dir, capsys):
    (tmp_path / "run").write_text("not a directory")
    for out, said in ((tmp_path / "run", "is an existing file, not a directory"),
                      (tmp_path / "run" / "sub", f"cannot be made: {tmp_path / 'run'} is a file")):
        for extra in ([], ["--overwrite"], ["--resume"]):
            assert main(["pretrain", "--data", data_dir, "--out", str(out)] + extra) == 2
            assert capsys.readouterr().err == f"npbert pretrain: error: output directory {out} {said}\n"
    assert (tmp_path / "run").read_text() == "not a directory"


def test_a_kill_during_overwrite_is_undone_by_the_next_command(tmp_path, data_dir, trained):
    """Killed after moving the old run aside and before the new one saved: the next command on
    that --out puts the old run back (the process that made the aside is gone)."""
    dead = 2 ** 22 + 12345                               # above pid_max's default: no such process
    aside = tmp_path / f".run.replaced-{dead}-0123abcd"
    os.rename(trained, aside)
    os.makedirs(os.path.join(trained, "data"))           # what the killed run had made of the new one
    with open(os.path.join(trained, "npbert_run.json"), "w") as f:
        f.write("{}")
    assert pretrain(options(tmp_path, data_dir, steps=7), resume=True, log=quiet)["step"] == 7
    assert saved_step(trained) == 7 and not aside.exists() and not os.path.exists(os.path.join(trained, "data"))


def test_a_failed_first_run_does_not_block_the_retry(tmp_path, data_dir, monkeypatch):
    one = tmp_path / "one.txt"
    one.write_text("one short document .\nwith two sentences .\n")
    with pytest.raises(DataError, match="document"):
        pretrain(options(tmp_path, data_dir, data=None, corpus=str(one), max_seq_length=32), log=quiet)
    assert not (tmp_path / "run").exists()               # nothing of it was kept
    corpus = tmp_path / "fixed.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends here .\n\n" for i in range(30)))
    first = options(tmp_path, data_dir, data=None, corpus=str(corpus), max_seq_length=32, steps=4, save_every=100)
    import npbert.pretrain as pretrain_module
    real = pretrain_module.pretraining_forward

    def crash_at_step_3(*args, **kwargs):
        if kwargs.get("rng") is not None and len(crash_at_step_3.calls) == 2:
            raise MemoryError("out of memory (simulated)")
        crash_at_step_3.calls.append(1)
        return real(*args, **kwargs)
    crash_at_step_3.calls = []
    monkeypatch.setattr(pretrain_module, "pretraining_forward", crash_at_step_3)
    with pytest.raises(MemoryError):                     # the data is prepared, no checkpoint was saved
        pretrain(first, log=quiet)
    monkeypatch.setattr(pretrain_module, "pretraining_forward", real)
    assert (tmp_path / "run" / "data" / "manifest.json").exists()
    with pytest.raises(NpbertError, match="stopped before it saved a checkpoint; run the same command again"):
        pretrain(first, resume=True, log=quiet)
    said = []
    assert pretrain(first, log=said.append)["step"] == 4          # the same command again: no --overwrite needed
    assert not any("already exists" in line for line in said)


# --- a kill in the middle of a checkpoint save ----------------------------------------------------

KILLED = 2 ** 22 + 777            # a pid above Linux's default pid_max: the process that left these is gone


def make_interrupted_save(ckpt, state):
    """The state a kill during atomic_replace_dir leaves, made by hand; ckpt is the last save."""
    import shutil
    parent = os.path.dirname(ckpt)
    old = os.path.join(parent, f".checkpoint.old-{KILLED}-0000000a")
    new = os.path.join(parent, f".checkpoint.tmp-{KILLED}-0000000b")
    if state == "filling the new copy":                 # half a new copy beside the intact checkpoint
        shutil.copytree(ckpt, new, ignore=lambda d, names: ["model.safetensors"])
    elif state == "between the two renames":            # a complete new copy; the last save renamed aside
        shutil.copytree(ckpt, new)
        os.rename(ckpt, old)
    elif state == "only the renamed last save":
        os.rename(ckpt, old)
    elif state == "deleting the last save":             # the new checkpoint in place, the old half deleted
        shutil.copytree(ckpt, old, ignore=lambda d, names: names[:1])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data_dir):
    opts = options(tmp_path_factory.mktemp("uninterrupted"), data_dir, steps=12)
    pretrain(opts, log=quiet)
    return train_losses(opts.out)


@pytest.mark.parametrize("state", ["filling the new copy", "between the two renames", "only the renamed last save",
                                   "deleting the last save"])
def test_resume_recovers_from_every_state_a_kill_during_a_save_leaves(tmp_path, data_dir, uninterrupted, state):
    pretrain(options(tmp_path, data_dir, steps=12, stop_after=7), log=quiet)
    run = str(tmp_path / "run")
    make_interrupted_save(os.path.join(run, "checkpoint"), state)
    assert pretrain(options(tmp_path, data_dir, steps=12), resume=True, log=quiet)["step"] == 12
    assert train_losses(run) == uninterrupted
    assert [e for e in os.listdir(run) if e.startswith(".")] == []      # the leftovers are gone


def test_resume_refuses_options_that_would_change_the_run(tmp_path, data_dir):
    pretrain(options(tmp_path, data_dir, stop_after=5), log=quiet)
    for change, flag in ((dict(steps=60), "--steps 60"), (dict(preset="mini"), "--preset mini"),
                         (dict(learning_rate=1.0), "--learning-rate 1.0")):
        with pytest.raises(NpbertError, match=f"{flag} cannot change when resuming: .* started with"):
            pretrain(options(tmp_path, data_dir, **change), resume=True, log=quiet)
    with pytest.raises(NpbertError, match="--resume and --overwrite contradict each other"):
        pretrain(options(tmp_path, data_dir), resume=True, overwrite=True, log=quiet)
    r = pretrain(options(tmp_path, data_dir, log_every=7, eval_every=9, save_every=11), resume=True, log=quiet)
    assert r["step"] == 40                               # what is logged, evaluated, saved may change


def test_cli_resume_refuses_typed_options_that_would_change_the_run(tmp_path, data_dir, capsys):
    out = str(tmp_path / "run")
    base = ["pretrain", "--data", data_dir, "--out", out, "--batch-size", "4", "--eval-batches", "1"]
    assert main(base + ["--steps", "6", "--stop-after", "2"]) == 0
    for flags, said in ((["--steps", "60"], "--steps 60 cannot change when resuming"),
                        (["--steps", "1200"], "--steps 1200 cannot change"),        # the default, but typed
                        (["--preset", "mini"], "--preset mini cannot change"),
                        (["--learning-rate", "1"], "--learning-rate 1.0 cannot change"),
                        (["--no-nsp"], "--no-nsp True cannot change when resuming: the run in"),
                        (["--mask-mix", "100/0/0"], "--mask-mix 100/0/0 cannot change"),
                        (["--overwrite"], "--resume and --overwrite contradict each other")):
        assert main(base + ["--resume"] + flags) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err
    assert main(base + ["--resume", "--log-every", "1"]) == 0                 # what is logged may change
    assert "step     6/6" in capsys.readouterr().out


def test_cli_without_out_does_not_collide_with_an_earlier_run(tmp_path, data_dir, monkeypatch, capsys):
    """The README's first command can be run twice: the second run goes beside the first."""
    monkeypatch.chdir(tmp_path)
    cmd = ["pretrain", "--data", data_dir, "--steps", "2", "--batch-size", "4", "--eval-batches", "1"]
    assert main(cmd) == 0 and main(cmd) == 0
    out = capsys.readouterr().out
    assert "runs/pretrain holds an earlier run (continue it with --resume, replace it with --overwrite); " \
           "this run goes to runs/pretrain-2" in out
    assert saved_step("runs/pretrain") == 2 and saved_step("runs/pretrain-2") == 2
    assert main(cmd + ["--resume"]) == 0 and "runs/pretrain-3" not in capsys.readouterr().out


def test_ctrl_c_while_pretrain_prepares_its_corpus_leaves_nothing_that_blocks_the_retry(tmp_path, monkeypatch,
                                                                                        capsys):
    """Ctrl-C during WordPiece training (before any step): one line, exit 130, and the same
    command then runs (no "already exists", no half-prepared data in the way)."""
    import npbert.tokenizer.trainer
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"document {i} begins here .\nand it ends there .\n\n" for i in range(30)))
    cmd = ["pretrain", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--max-seq-length", "32",
           "--vocab-size", "64", "--steps", "2", "--batch-size", "4", "--eval-batches", "1"]
    real = npbert.tokenizer.trainer.train_wordpiece_vocab

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", interrupted)
    assert main(cmd) == 130
    assert capsys.readouterr().err == "npbert pretrain: interrupted\n"
    monkeypatch.setattr(npbert.tokenizer.trainer, "train_wordpiece_vocab", real)
    assert main(cmd) == 0 and saved_step(str(tmp_path / "run")) == 2


def test_the_advice_to_hold_no_documents_out_leads_to_a_run(tmp_path, capsys):
    """A corpus too small to hold documents out: the error advises --heldout-fraction 0, and
    pretraining with it trains and saves, saying there is no held-out evaluation (it used to
    stop at "has no split 'heldout'")."""
    corpus = tmp_path / "three.txt"
    corpus.write_text("".join(f"document {i} is here .\nit has two lines .\n\n" for i in range(3)))
    cmd = ["pretrain", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--max-seq-length", "32",
           "--vocab-size", "40", "--steps", "2", "--batch-size", "2"]
    assert main(cmd) == 2 and "or hold none out with --heldout-fraction 0" in capsys.readouterr().err
    assert main(cmd + ["--heldout-fraction", "0"]) == 0
    out = capsys.readouterr().out
    assert "no held-out documents (prepared with --heldout-fraction 0): no held-out evaluation" in out
    assert saved_step(str(tmp_path / "run")) == 2


# --- masked LM only (--no-nsp) and the mask mix ----------------------------------------------------

def records(out, kind):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == kind]


def saved_options(out):
    with open(os.path.join(out, "checkpoint", "training_state.json")) as f:
        return json.load(f)["options"]


def test_without_nsp_the_nsp_head_and_pooler_never_change_and_nothing_reports_nsp(tmp_path, data_dir, monkeypatch):
    """A large weight decay would move any frozen weight it touched; the NSP labels, counted in
    no loss, give the frozen parameters zero gradients; no NSP figure anywhere."""
    from npbert.model import NSP_ONLY_PARAMS
    from npbert.optim import AdamW
    from npbert.pretrain import load_prepared, new_checkpoint
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
    assert all(not np.array_equal(trained[k], init[k]) for k in trained if k not in NSP_ONLY_PARAMS)
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
    from npbert.pretrain import evaluate
    on, off = (options(tmp_path / name, data_dir, steps=3, no_nsp=name == "off", hidden_dropout_prob=0.1)
               for name in ("on", "off"))
    pretrain(on, log=quiet)
    r = pretrain(off, log=quiet)
    first_on, first_off = records(on.out, "train")[0], records(off.out, "train")[0]
    assert first_on["mlm_loss"] == first_off["mlm_loss"]
    assert first_off["loss"] == first_off["mlm_loss"] and first_on["loss"] == first_on["mlm_loss"] + first_on["nsp_loss"]
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
