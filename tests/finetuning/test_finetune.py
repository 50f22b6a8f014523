"""Fine-tuning end to end at small scale: every built-in task beats chance in a few seconds from
a tiny model, a control run with learning rate 0 does not, resume is bit-exact, and the
evaluate / predict commands read what finetune saved."""
import dataclasses
import json

import numpy as np
import pytest

from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.cli import main
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.errors import CheckpointError, DataError, NpbertError
from npbert.finetuning.recipe import FinetuneOptions, finetune
from npbert.heads.registry import HEADS
from npbert.model_params import init_params
from npbert.tasks.formats import SCORES
from npbert.tasks.registry import TASKS, read_examples
from npbert.tokenizer import BertTokenizer
from support.optimizer_spy import spy_on_updates
from support.random_models import micro  # noqa: F401  (a fixture)


def majority_share(task, examples):
    """Accuracy of always predicting the most frequent dev label: the chance level to beat."""
    labels = [str(ex["label"]) for ex in examples]
    return max(labels.count(v) for v in set(labels)) / len(labels)


def options(micro, tmp_path, task, n, epochs, **kw):
    return FinetuneOptions(task=task, model=micro, out=str(tmp_path / "run"), epochs=epochs, max_train_examples=n,
                           max_eval_examples=200, learning_rate=kw.pop("learning_rate", 3e-3), log_every=1000, **kw)


# task -> (training examples, epochs, metric, how far above chance it must end, a line for `npbert predict`)
BUDGETS = {
    # 6 epochs: at 2 the accuracy was a lottery over the dropout masks (seeds 0-5: 0.20-0.68 here; 0.20 at
    # seed 1 with the older PCG64 masks too); at 6 every one of those seeds reached 0.91-1.0
    "builtin-sentence": (2000, 6, "accuracy", 0.1, "Anna bakes fresh bread every morning."),
    "builtin-pair": (1000, 3, "accuracy", 0.15, "Anna Smith is a baker.\tAnna has a dog."),
    "builtin-tagging": (1000, 2, "entity_f1", 0.5, "Anna Smith lives in Paris ."),
    "builtin-qa": (800, 3, "f1", 0.15, "How old is Anna?\tAnna Smith is a baker. She is 42 years old."),
    "builtin-choice": (800, 3, "accuracy", 0.12,
                       "Anna is a baker.\tShe bakes bread.\tShe flies planes.\tShe was tired."),
}


@pytest.mark.parametrize("task", list(BUDGETS))
def test_every_builtin_task_beats_chance_and_predicts(micro, tmp_path, task, capsys):
    n, epochs, metric, margin, line = BUDGETS[task]
    result = finetune(options(micro, tmp_path, task, n, epochs), log=lambda *a: None)
    dev = read_examples(TASKS[task], "dev")[:200]
    chance = 0.0 if metric in ("entity_f1", "f1") else majority_share(TASKS[task], dev)   # all-O / empty span: 0
    assert result[metric] > chance + margin, f"{task}: {metric} {result[metric]:.3f}, chance {chance:.3f}"
    check_evaluate_and_predict(result, task, metric, line, tmp_path, capsys)


def test_builtin_qnli_runs_end_to_end_as_a_pair_task(micro, tmp_path, capsys):
    # A random micro model does not learn builtin-qnli's question-sentence relation in a test's
    # budget (it stays at 1/2: neither segment alone tells the label), a pretrained tiny model does
    # (docs/results.md); this checks the task's wiring: labels, baseline, evaluate, predict.
    result = finetune(options(micro, tmp_path, "builtin-qnli", 200, 1), log=lambda *a: None)
    baseline = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert baseline["kind"] == "baseline" and baseline["accuracy"] == 0.5        # four records a story, 2 each
    check_evaluate_and_predict(result, "builtin-qnli", "accuracy", "How old is Anna?\tAnna is 42 years old.",
                               tmp_path, capsys)


def check_evaluate_and_predict(result, task, metric, line, tmp_path, capsys):
    # the saved best model is what evaluate and predict read
    capsys.readouterr()
    assert main(["evaluate", result["best"], "--task", task, "--max-examples", "200", "--json"]) == 0
    # evaluate runs on the backend in force, as finetune did, in the same batches: the same numbers
    assert json.loads(capsys.readouterr().out)[metric] == pytest.approx(result[metric])
    (tmp_path / "in.txt").write_text(line + "\n")
    assert main(["predict", result["best"], "--task", task, "--input", str(tmp_path / "in.txt")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    if task == "builtin-tagging":
        assert [w.rsplit("/", 1)[0] for w in out[0].split()] == line.split()
        assert all(w.rsplit("/", 1)[1] in TASKS[task].labels for w in out[0].split())
    elif task == "builtin-qa":
        assert out[0].split("\t")[0] in line.split("\t")[1]           # a span of the context
    elif task == "builtin-choice":
        index, p, ending = out[0].split("\t")
        assert line.split("\t")[1 + int(index)] == ending and 0.25 <= float(p) <= 1
    else:
        label, p = out[0].split("\t")
        assert label in TASKS[task].labels and 0 < float(p) <= 1


def test_control_with_learning_rate_zero_stays_at_chance(micro, tmp_path):
    # the same run as above without learning: proves the test above can fail
    result = finetune(options(micro, tmp_path, "builtin-sentence", 1000, 2, learning_rate=0.0), log=lambda *a: None)
    dev = read_examples(TASKS["builtin-sentence"], "dev")[:200]
    assert result["accuracy"] <= majority_share(TASKS["builtin-sentence"], dev) + 0.05


def test_resume_is_bit_exact(micro, tmp_path):
    kw = dict(task="builtin-pair", model=micro, epochs=2, max_train_examples=200, max_eval_examples=50,
              batch_size=32, log_every=3)
    finetune(FinetuneOptions(out=str(tmp_path / "a"), **kw), log=lambda *a: None)
    stopped = finetune(FinetuneOptions(out=str(tmp_path / "b"), stop_after=10, **kw), log=lambda *a: None)
    assert stopped["stopped"] and stopped["step"] == 10                # mid second epoch (7 steps per epoch)
    finetune(FinetuneOptions(out=str(tmp_path / "b")), resume=True, log=lambda *a: None)
    for sub in ("best", "checkpoint"):
        a, b = (load_pretrained(str(tmp_path / r / sub), strict=False).params for r in "ab")
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    logs = [[json.loads(x) for x in (tmp_path / r / "metrics.jsonl").read_text().splitlines()] for r in "ab"]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "tokens_per_s"} for r in rs]   # noqa: E731
    assert strip(logs[0]) == strip(logs[1])
    # the dev baseline opens the log, once (not again on resume): always the most frequent training label
    assert [r["kind"] for r in logs[1]].count("baseline") == 1 and logs[1][0]["kind"] == "baseline"
    dev = [str(ex["label"]) for ex in read_examples(TASKS["builtin-pair"], "dev")[:50]]
    train = [str(ex["label"]) for ex in read_examples(TASKS["builtin-pair"], "train")[:200]]
    assert logs[1][0]["accuracy"] == dev.count(max(set(train), key=train.count)) / len(dev)


def test_saved_model_has_hugging_face_fields_and_refuses_a_mismatched_head(micro, tmp_path, capsys):
    result = finetune(options(micro, tmp_path, "builtin-sentence", 64, 1), log=lambda *a: None)
    config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"]["0"] == TASKS["builtin-sentence"].labels[0] and config["num_labels"] == 12
    loaded = load_pretrained(result["best"], strict=False)
    params = dict(loaded.params, **{"classifier.weight": np.zeros((12, 16), np.float32)})
    save_pretrained(str(tmp_path / "bad"), loaded.config, params, loaded.tokenizer)
    assert main(["evaluate", str(tmp_path / "bad"), "--task", "builtin-sentence"]) == 2
    assert "classifier.weight has shape (12, 16)" in capsys.readouterr().err
    with pytest.raises(CheckpointError, match="no qa_outputs"):
        from npbert.finetuning.evaluation import load_finetuned
        load_finetuned(result["best"], TASKS["builtin-qa"])


def test_clear_errors(micro, tmp_path):
    with pytest.raises(NpbertError, match="exactly one of --model"):
        finetune(FinetuneOptions(task="builtin-sentence", out=str(tmp_path / "x")), log=lambda *a: None)
    good = tmp_path / "good.tsv"
    good.write_text("sentence\tlabel\nthe cat\t1\n")
    with pytest.raises(DataError, match="needs --vocab"):
        finetune(FinetuneOptions(task="sst-2", from_scratch="tiny", train=str(good), dev=str(good),
                                 out=str(tmp_path / "y")), log=lambda *a: None)
    with pytest.raises(DataError, match="reads files: pass --train"):
        finetune(FinetuneOptions(task="sst-2", model=micro, out=str(tmp_path / "z")), log=lambda *a: None)
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\nthe cat\t1\nthe dog\t2\n")
    with pytest.raises(DataError, match=r"bad.tsv:3: label '2' is not one of the task's labels \(0, 1\)"):
        finetune(FinetuneOptions(task="sst-2", model=micro, train=str(bad), dev=str(bad), out=str(tmp_path / "w")),
                 log=lambda *a: None)


# --- the bag-of-words baseline ------------------------------------------------------------------------

def test_bow_features_and_gradient():
    from npbert.finetuning.bow_baseline import Tfidf, ngrams
    from npbert.logreg import loss_and_grads
    from npbert.gradcheck import numerical_gradient, relative_error
    assert ngrams("The cat, sat") == ["the", "cat", ",", "sat", "the cat", "cat ,", ", sat"]
    terms = [ngrams(t) for t in ("the cat sat", "the dog ran", "a cat ran ran")]
    X = Tfidf(terms).transform(terms)
    dense = np.zeros(X.shape)
    np.add.at(dense, (X.row, X.col), X.value)
    assert np.allclose(np.linalg.norm(dense, axis=1), 1.0)                 # unit-length rows
    rng = np.random.default_rng(0)
    W, b, y = rng.standard_normal((X.shape[1], 3)), rng.standard_normal(3), np.array([0, 2, 1])
    assert np.allclose(X.matmul(W), dense @ W) and np.allclose(X.rmatmul(np.ones((3, 3))), dense.T @ np.ones((3, 3)))
    _, dW, db = loss_and_grads(W, b, X, y, l2=0.1)
    assert relative_error(dW, numerical_gradient(lambda: loss_and_grads(W, b, X, y, 0.1)[0], W)) < 1e-6
    assert relative_error(db, numerical_gradient(lambda: loss_and_grads(W, b, X, y, 0.1)[0], b)) < 1e-6


def test_bow_baseline_learns_a_task():
    from npbert.finetuning.bow_baseline import bow_baseline
    train = read_examples(TASKS["builtin-sentence"], "train")[:1500]
    dev = read_examples(TASKS["builtin-sentence"], "dev")[:300]
    r = bow_baseline(train, dev, dev, l2_grid=(1e-4,), log=lambda *a: None)
    # dev given as test: the same computation, the same number
    assert r["dev_accuracy"] == r["test_accuracy"] > majority_share(TASKS["builtin-sentence"], dev) + 0.3


def test_bow_baseline_command_takes_the_first_n_training_examples(capsys):
    from npbert.finetuning.bow_baseline import main as bow_main
    assert bow_main(["--task", "builtin-sentence", "--max-train-examples", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("200 training examples\n") and "test accuracy" in out


def test_bow_baseline_command_names_bad_input(capsys):
    from npbert.finetuning.bow_baseline import main as bow_main
    assert bow_main(["--task", "classification", "--train", "missing.jsonl"]) == 2
    assert "error: task file not found: missing.jsonl" in capsys.readouterr().err
    assert bow_main(["--task", "builtin-tagging"]) == 2
    assert "builtin-tagging is a token classification task" in capsys.readouterr().err


def test_file_tasks_run_end_to_end(micro, tmp_path, capsys):
    # one small file per reader that the built-in tasks do not cover: fine-tune, evaluate, predict
    words = "the baker bakes fresh bread in paris and the pilot flies planes to rome".split()
    rng = np.random.default_rng(0)
    sents = [" ".join(rng.choice(words, 6)) for _ in range(24)]
    files = {
        "regression": ("r.csv", "text,text_pair,label\n" + "".join(f"{s},{s[::-1]},{i % 5}.5\n" for i, s in
                                                                      enumerate(sents))),
        "conll": ("c.txt", "-DOCSTART- O\n\n" + "".join(f"{w} {'B-LOC' if w in ('paris', 'rome') else 'O'}\n" +
                                                        ("\n" if i % 6 == 5 else "") for i, w in
                                                        enumerate(" ".join(sents).split()))),
        "squad": ("s.json", json.dumps({"data": [{"paragraphs": [{"context": s, "qas": [
            {"id": str(i), "question": "where ?", "answers": [{"text": s.split()[2],
                                                              "answer_start": len(" ".join(s.split()[:2])) + 1}]}]}
            for i, s in enumerate(sents)]}]})),
        "swag": ("w.csv", "sent1,sent2,ending0,ending1,ending2,ending3,label\n" +
                 "".join(f"{s},the,{sents[i - 1]},{sents[i - 2]},{s},{sents[i - 3]},2\n" for i, s in enumerate(sents))),
    }
    for task, (name, text) in files.items():
        path = tmp_path / name
        path.write_text(text)
        out = tmp_path / task
        result = finetune(FinetuneOptions(task=task, model=micro, train=str(path), dev=str(path), out=str(out),
                                          epochs=1, batch_size=8, max_seq_length=64), log=lambda *a: None)
        first = result[TASKS[task].metrics[0]]
        if TASKS[task].format is SCORES:   # Spearman's rho: a correlation, and 0 only for constant predictions
            assert -1 <= first <= 1 and first != 0, (task, result)
        else:                        # accuracy, F1
            assert 0 <= first <= 1, (task, result)
        capsys.readouterr()
        assert main(["evaluate", str(out / "best"), "--task", task, "--data", str(path), "--json",
                     "--max-seq-length", "64"]) == 0
        # the dev scores finetune reported, to the bit: dev is this file, and evaluate runs the saved
        # weights on the backend in force (finetune's), in the same batches of 64
        scores = json.loads(capsys.readouterr().out)
        assert {m: scores[m] for m in TASKS[task].metrics} == {m: result[m] for m in TASKS[task].metrics}, task
        assert main(["predict", str(out / "best"), "--task", task, "--input", str(path), "--task-file",
                     "--max-seq-length", "64"]) == 0
        assert len(capsys.readouterr().out.splitlines()) == len(read_examples(TASKS[task], str(path)))


def test_finetuning_uses_the_checkpoints_dropout_unless_told(tmp_path):
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)                      # as npbert pretrain saves it
    save_pretrained(str(tmp_path / "ckpt"), config, init_params(config, np.random.default_rng(0), heads=False),
                    tokenizer)
    for i, (given, want) in enumerate([({}, (0.0, 0.0)),
                                       (dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.2), (0.1, 0.2))]):
        opts = options(str(tmp_path / "ckpt"), tmp_path, "builtin-sentence", 32, 1, **given)
        finetune(dataclasses.replace(opts, out=str(tmp_path / f"run{i}")), log=lambda *a: None)
        saved = json.loads((tmp_path / f"run{i}" / "best" / "config.json").read_text())
        assert (saved["hidden_dropout_prob"], saved["attention_probs_dropout_prob"]) == want


# --- the shared training loop, from fine-tuning's side --------------------------------------------------

def test_every_step_uses_the_schedule_and_clipped_gradients(micro, tmp_path, monkeypatch):
    seen = spy_on_updates(monkeypatch)
    opts = options(micro, tmp_path, "builtin-sentence", 96, 2, batch_size=16, learning_rate=1e-3,
                   warmup_proportion=0.25, max_grad_norm=0.01)
    finetune(opts, log=lambda *a: None)
    total, warmup, peak = 12, 3, 1e-3                  # 2 epochs of 96 / 16 steps; 25% warmup
    expected = [peak * i / warmup if i < warmup else peak * (total - i) / (total - warmup) for i in range(total)]
    assert [lr for lr, _ in seen] == pytest.approx(expected, rel=1e-12, abs=0)
    assert all(abs(norm - 0.01) < 1e-5 * 0.01 for _, norm in seen)


def test_save_every_bounds_what_a_kill_loses_and_resumes_bit_exactly(micro, tmp_path, monkeypatch):
    """A kill (not Ctrl-C: no chance to save) at step 9 of a 7-step epoch: the checkpoint of
    step 8 (--save-every 4) is there, and resuming from it repeats the uninterrupted run."""
    kw = dict(task="builtin-pair", model=micro, epochs=2, max_train_examples=200, max_eval_examples=50,
              batch_size=32, log_every=3, save_every=4)
    finetune(FinetuneOptions(out=str(tmp_path / "a"), **kw), log=lambda *a: None)
    import npbert.finetuning.job as finetune_module
    real, steps = finetune_module.model_of, {"n": 0}

    def killed_at_step_9(*args, **kwargs):
        steps["n"] += kwargs["rng"] is not None          # training steps; the dev evaluation has no dropout
        if steps["n"] == 9:
            raise KeyboardInterrupt                      # as SIGKILL would, minus the process
        forward, _ = real(args[1], HEADS["sequence_classification"])
        return forward(*args, **kwargs)
    monkeypatch.setattr(finetune_module, "model_of", lambda config, head: (killed_at_step_9, real(config, head)[1]))
    with pytest.raises(KeyboardInterrupt):
        finetune(FinetuneOptions(out=str(tmp_path / "b"), **kw), log=lambda *a: None)
    state = json.loads((tmp_path / "b" / "checkpoint" / "training_state.json").read_text())
    assert state["position"] == dict(step=8, epoch=1, batch=1)
    monkeypatch.setattr(finetune_module, "model_of", real)
    finetune(FinetuneOptions(out=str(tmp_path / "b")), resume=True, log=lambda *a: None)
    a, b = (load_pretrained(str(tmp_path / r / "checkpoint"), strict=False).params for r in "ab")
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_overwrite_with_a_bad_task_file_keeps_the_earlier_run(micro, tmp_path):
    finetune(options(micro, tmp_path, "builtin-sentence", 64, 1), log=lambda *a: None)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    wrong = tmp_path / "wrong.tsv"
    wrong.write_text("text\tlabel\nthe cat\t1\n")                     # sst-2 wants a "sentence" column
    with pytest.raises(DataError, match="wrong.tsv"):
        finetune(FinetuneOptions(task="sst-2", model=micro, train=str(wrong), dev=str(wrong), out=str(tmp_path / "run")),
                 overwrite=True, log=lambda *a: None)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
    assert load_pretrained(str(tmp_path / "run" / "best"), strict=False).config.extra["num_labels"] == 12


def test_resume_refuses_options_that_would_change_the_run(micro, tmp_path):
    kw = dict(task="builtin-pair", model=micro, epochs=2, max_train_examples=200, max_eval_examples=50)
    finetune(FinetuneOptions(out=str(tmp_path / "run"), stop_after=3, **kw), log=lambda *a: None)
    with pytest.raises(NpbertError, match="--epochs 4 cannot change when resuming"):
        finetune(FinetuneOptions(out=str(tmp_path / "run"), epochs=4), resume=True, log=lambda *a: None)
    with pytest.raises(NpbertError, match="--epochs 3 cannot change"):      # the default, typed (the CLI says so)
        finetune(FinetuneOptions(out=str(tmp_path / "run"), epochs=3), resume=True, log=lambda *a: None,
                 given={"out", "epochs"})
    with pytest.raises(NpbertError, match="--learning-rate 0.1 cannot change when resuming"):
        finetune(FinetuneOptions(out=str(tmp_path / "run"), learning_rate=0.1), resume=True, log=lambda *a: None)
    assert not finetune(FinetuneOptions(out=str(tmp_path / "run"), log_every=1), resume=True,
                        log=lambda *a: None)["stopped"]


def test_out_that_is_a_file_is_refused(micro, tmp_path, capsys):
    (tmp_path / "run").write_text("my notes")
    for extra in ([], ["--overwrite"]):
        assert main(["finetune", "--task", "builtin-sentence", "--model", micro, "--out", str(tmp_path / "run")]
                    + extra) == 2
        assert "is an existing file, not a directory" in capsys.readouterr().err
    assert (tmp_path / "run").read_text() == "my notes"


def test_a_fine_tuned_checkpoint_says_what_it_is(micro, tmp_path, capsys):
    """The run's first line names the head and counts sequences (four per multiple-choice example)
    and epochs in good English; `npbert info` gives the checkpoint's own class, not
    BertForPreTraining; `npbert fill-mask` says it has no masked-LM head and what it is."""
    said = []
    opts = dataclasses.replace(options(micro, tmp_path, "builtin-choice", 20, 1), max_eval_examples=8)
    result = finetune(opts, log=said.append)
    assert any("(BertForMultipleChoice) on 20 examples (80 sequences), dev 8: 1 epoch of 1 step of 32" in s
               for s in said), said
    capsys.readouterr()
    assert main(["info", result["best"]]) == 0
    out = capsys.readouterr().out
    assert "BertForMultipleChoice (+ classifier):" in out and "BertForPreTraining" not in out
    assert main(["fill-mask", result["best"], "the [MASK] ."]) == 2
    err = capsys.readouterr().err
    assert "is a BertForMultipleChoice and has no masked-LM head" in err and "npbert predict" in err
    assert "Unexpected tensors" not in err
