"""The feature-based approach (npbert/heads/feature_based.py, `npbert finetune --features`): the features
are the encoder's own hidden states combined as each choice says (checked against the trace of
bert_forward and a plain NumPy mix), the backward never reaches the encoder, a run leaves the
encoder's weights as they were and records its choice, evaluate and predict reproduce it,
resume is bit-exact, and an inconsistent checkpoint is refused with one line. The gradients
themselves are checked by the gradcheck cases feature_based[<kind>] and scalar_mix (model/test_gradcheck.py)."""
import dataclasses
import json

import numpy as np
import pytest
from support.random_models import random_checkpoint

from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.cli import main
from npbert.config import BertConfig
from npbert.errors import CheckpointError, NpbertError
from npbert.finetuning.recipe import FinetuneOptions, finetune
from npbert.finetuning.evaluation import load_finetuned
from npbert.gradcheck import Dims, op_cases, run_gradchecks
from npbert.heads.feature_based import FEATURES, FIELD, features_forward, with_features
from npbert.heads.params import head_shapes, init_head
from npbert.heads.registry import HEADS
from npbert.heads.task_model import model_of
from npbert.layers.scalar_mix import GAMMA, W
from npbert.model import bert_forward, bert_hidden_states
from npbert.model_params import init_params
from npbert.tasks.registry import TASKS
from npbert.trace import Trace

QUIET = dict(log=lambda *a: None)


@pytest.fixture(scope="module")
def micro3(tmp_path_factory):
    """A randomly initialised 3-layer BERT (hidden 16) with the built-in vocabulary: the last four
    hidden states exist."""
    return random_checkpoint(str(tmp_path_factory.mktemp("micro3")), layers=3, hidden=16)


def small_model(layers=3, seed=0):
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=12, max_position_embeddings=16, hidden_dropout_prob=0.3,
                        attention_probs_dropout_prob=0.3)
    rng = np.random.default_rng(seed)
    params = {k: v * 10 if v.ndim == 2 else v for k, v in init_params(config, rng, np.float64, heads=False).items()}
    ids = rng.integers(1, 30, (3, 6))
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4])
    ids[mask == 0] = 0
    return config, params, dict(input_ids=ids, token_type_ids=rng.integers(0, 2, (3, 6)), attention_mask=mask)


# --- the features ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FEATURES))
def test_features_are_the_hidden_states_combined_as_chosen(name):
    config, params, batch = small_model()
    trace = Trace()
    bert_forward(params, config, **batch, trace=trace)                     # the reference: HF's hidden_states
    states = [trace["bert.embeddings"]] + [trace[f"bert.encoder.layer.{i}"] for i in range(3)]
    chosen = {"embeddings": [0], "second-to-last": [2], "last": [3], "weighted-last-four": [0, 1, 2, 3],
              "concat-last-four": [0, 1, 2, 3], "weighted-all": [0, 1, 2, 3]}[name]
    fconfig = with_features(config, name)
    mix = {W: np.array([0.3, -1.0, 2.0, 0.5]), GAMMA: np.array([1.7])}
    x, _ = features_forward({**params, **mix}, fconfig, **batch, at_cls=False)
    if FEATURES[name].combine == "weighted":
        s = np.exp(mix[W]) / np.exp(mix[W]).sum()
        expected = 1.7 * sum(s[j] * states[i] for j, i in enumerate(chosen))
        assert np.abs(x - expected).max() < 1e-12
    else:
        expected = np.concatenate([states[i] for i in chosen], axis=-1)
        assert np.array_equal(x, expected)                                  # the same ops on the same backend
    assert x.shape[-1] == head_shapes(fconfig, HEADS["token_classification"], 3)["classifier.weight"][1]
    cls, _ = features_forward({**params, **mix}, fconfig, **batch, at_cls=True)
    assert np.array_equal(cls, x[:, 0])


def test_hidden_states_stop_at_the_deepest_layer_asked_for():
    config, params, batch = small_model()
    every = bert_hidden_states(params, config, **batch)
    first = bert_hidden_states(params, config, **batch, layers=1)
    assert len(every) == 4 and len(first) == 2
    assert all(np.array_equal(a, b) for a, b in zip(first, every))


FEATURE_CASES = [n for n in op_cases(Dims()) if n.startswith("feature_based[")]


@pytest.mark.parametrize("kind", list(HEADS))
def test_each_head_on_frozen_features_is_gradient_checked(kind):
    # the row feature_based[<kind>] differences the loss of npbert/heads/task_model.py's one model path
    # on a config that records a feature-based choice (float64 central differences, every head
    # parameter and the scalar mix): every head of the registry has one
    (result,) = run_gradchecks(Dims(), names=[f"feature_based[{kind}]"])
    assert result.passed and result.max_error < 1e-6, result.errors


@pytest.mark.parametrize("name", FEATURE_CASES)
def test_the_backward_gives_the_head_every_gradient_and_the_encoder_none(name):
    d = Dims(dropout=0.3, lengths=(3, 5))
    case = op_cases(d)[name]
    out, cache = case.run(case.inputs)
    grads = case.backward(1.0, cache)
    assert set(grads) == set(case.inputs) and not any(k.startswith("bert.") for k in grads)
    # a bias under a softmax over positions (QA) or over choices shifts every logit alike: its
    # gradient is 0 in exact arithmetic, so whether it rounds to 0.0 or to 1e-17 depends on the
    # CPU's SIMD width and says nothing; every other head parameter must get a gradient
    exempt = ZERO_IN_EXACT_ARITHMETIC.get(name.removeprefix("feature_based[").removesuffix("]"), set())
    assert all(np.any(g != 0) for k, g in grads.items() if k not in exempt), \
        "every head parameter gets a gradient"


ZERO_IN_EXACT_ARITHMETIC = {"question_answering": {"qa_outputs.bias"},
                            "multiple_choice": {"classifier.bias"}}


def test_the_frozen_encoder_runs_without_dropout_while_the_head_has_its_own():
    config, params, batch = small_model()                          # hidden and attention dropout 0.3
    fconfig = with_features(config, "last")
    params.update(init_head(fconfig, HEADS["sequence_classification"], 3, np.random.default_rng(1), np.float64))
    forward, _ = model_of(fconfig, HEADS["sequence_classification"])
    traces = [Trace(), Trace()]
    outs = [forward(params, fconfig, **batch, rng=rng, trace=t)[0]
            for rng, t in zip((None, np.random.default_rng(5)), traces)]
    assert np.array_equal(traces[0]["features"], traces[1]["features"])      # the same frozen features
    assert not np.array_equal(outs[0]["logits"], outs[1]["logits"])          # the classifier's dropout


def test_a_new_head_starts_from_the_plain_mean_and_fits_its_features():
    config = with_features(small_model()[0], "weighted-all")
    head = init_head(config, HEADS["token_classification"], 5, np.random.default_rng(0))
    assert np.array_equal(head[W], np.zeros(4)) and np.array_equal(head[GAMMA], np.ones(1))
    assert head["classifier.weight"].shape == (5, 8)
    assert head_shapes(with_features(config, "concat-last-four"), HEADS["question_answering"])["qa_outputs.weight"] == (2, 32)


# --- npbert finetune --features ---------------------------------------------------------------------------

TASK_FEATURES = [("builtin-tagging", "concat-last-four", "entity_f1", "Anna Smith lives in Paris ."),
                 ("builtin-sentence", "weighted-last-four", "accuracy", "Anna bakes fresh bread every morning."),
                 ("builtin-pair", "second-to-last", "accuracy", "Anna Smith is a baker.\tAnna has a dog."),
                 ("builtin-qa", "last", "f1", "How old is Anna?\tAnna Smith is a baker. She is 42 years old."),
                 ("builtin-choice", "embeddings", "accuracy", "Anna is a baker.\tShe bakes.\tShe flies.\tShe slept.")]


def feature_options(model, out, task, features, **kw):
    kw = dict(dict(epochs=1, learning_rate=3e-3), **kw)
    return FinetuneOptions(task=task, model=model, out=str(out), features=features, max_train_examples=kw.pop("n", 96),
                           max_eval_examples=64, log_every=1000, **kw)


def params_of(directory):
    return load_pretrained(str(directory), strict=False).params


@pytest.mark.parametrize("task, features, metric, line", TASK_FEATURES)
def test_a_run_trains_only_the_head_records_its_choice_and_evaluate_reproduces_it(micro3, tmp_path, capsys, task,
                                                                                  features, metric, line):
    result = finetune(feature_options(micro3, tmp_path / "run", task, features), **QUIET)
    start = params_of(micro3)
    head = set(head_shapes(with_features(load_pretrained(micro3).config, features), TASKS[task].head))   # names
    for sub in ("best", "checkpoint"):
        saved = params_of(tmp_path / "run" / sub)
        assert all(np.array_equal(saved[k], start[k]) for k in start), "the encoder is frozen"
        assert set(saved) == set(start) | head
    assert json.loads((tmp_path / "run" / "best" / "config.json").read_text())[FIELD] == features
    capsys.readouterr()
    assert main(["info", result["best"]]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(f"on the frozen encoder's features ({features})")
    state = json.loads((tmp_path / "run" / "checkpoint" / "training_state.json").read_text())
    assert set(state["frozen"]) == set(start)                               # every bert.* tensor, pooler too
    capsys.readouterr()
    assert main(["evaluate", result["best"], "--task", task, "--max-examples", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[metric] == pytest.approx(result[metric])
    (tmp_path / "in.txt").write_text(line + "\n")
    assert main(["predict", result["best"], "--task", task, "--input", str(tmp_path / "in.txt")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_the_head_learns_and_a_control_with_learning_rate_zero_does_not(micro3, tmp_path):
    """The frozen random encoder's features do not tag well, but training the head lowers the dev
    loss well below the untrained head's (the control proves the comparison can fail)."""
    losses = {lr: finetune(feature_options(micro3, tmp_path / str(lr), "builtin-tagging", "weighted-all", n=256,
                                           epochs=3, learning_rate=lr), **QUIET)["loss"] for lr in (0.0, 3e-2)}
    assert losses[3e-2] < 0.6 * losses[0.0], losses


def test_resume_is_bit_exact(micro3, tmp_path):
    kw = dict(n=160, batch_size=32, epochs=2)
    finetune(feature_options(micro3, tmp_path / "a", "builtin-tagging", "weighted-last-four", **kw), **QUIET)
    stopped = finetune(feature_options(micro3, tmp_path / "b", "builtin-tagging", "weighted-last-four",
                                       stop_after=7, **kw), **QUIET)
    assert stopped["stopped"] and stopped["step"] == 7                       # mid second epoch (5 steps per epoch)
    finetune(FinetuneOptions(out=str(tmp_path / "b")), resume=True, **QUIET)
    for sub in ("best", "checkpoint"):
        a, b = params_of(tmp_path / "a" / sub), params_of(tmp_path / "b" / sub)
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(NpbertError, match="--features last cannot change when resuming"):
        finetune(FinetuneOptions(out=str(tmp_path / "b"), features="last"), resume=True, **QUIET)


def test_a_feature_based_checkpoint_continues_with_its_head_only_on_the_same_features(micro3, tmp_path):
    first = finetune(feature_options(micro3, tmp_path / "first", "builtin-sentence", "weighted-all"), **QUIET)
    said = []
    finetune(feature_options(first["best"], tmp_path / "same", "builtin-sentence", "weighted-all", learning_rate=0.0),
             log=said.append)
    assert any("continuing its BertForSequenceClassification head" in s for s in said)
    same, before = params_of(tmp_path / "same" / "best"), params_of(first["best"])
    assert all(np.array_equal(same[k], before[k]) for k in before)
    said.clear()
    finetune(feature_options(first["best"], tmp_path / "full", "builtin-sentence", "fine-tune"), log=said.append)
    assert any("dropping its head (--features weighted-all; this run: fine-tune)" in s for s in said)
    config = json.loads((tmp_path / "full" / "best" / "config.json").read_text())
    assert FIELD not in config and not any(k.startswith("scalar_mix.") for k in params_of(tmp_path / "full" / "best"))


# --- clear errors -------------------------------------------------------------------------------------------

def test_choices_the_model_cannot_give_are_refused_before_anything_is_written(micro3, tmp_path, capsys):
    with pytest.raises(NpbertError, match=r"--features 'bogus' is not one of fine-tune, embeddings, "):
        finetune(feature_options(micro3, tmp_path / "x", "builtin-sentence", "bogus"), **QUIET)
    with pytest.raises(NpbertError, match=r"--features concat-last-four takes the last four hidden states, and a "
                                          r"2-layer model has 3 \(the embeddings' output and 2 layers\)"):
        finetune(FinetuneOptions(task="builtin-sentence", from_scratch="tiny", features="concat-last-four",
                                 out=str(tmp_path / "y")), **QUIET)
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    with pytest.raises(SystemExit) as e:                                     # argparse: exit 2, the choices listed
        main(["finetune", "--task", "builtin-sentence", "--model", micro3, "--features", "bogus"])
    assert e.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def trained(micro3, tmp_path_factory):
    """A feature-based builtin-tagging model (weighted-last-four: a scalar mix and a (7, 16) classifier)."""
    out = tmp_path_factory.mktemp("trained") / "run"
    return finetune(feature_options(micro3, out, "builtin-tagging", "weighted-last-four", n=32), **QUIET)["best"]


def edited(trained, tmp_path, features="weighted-last-four", drop=()):
    """A copy of the trained model with config.json's choice replaced (None: removed) and tensors dropped."""
    loaded = load_pretrained(trained, strict=False)
    extra = {k: v for k, v in loaded.config.extra.items() if k != FIELD}
    if features is not None:
        extra[FIELD] = features
    params = {k: v for k, v in loaded.params.items() if k not in drop}
    save_pretrained(str(tmp_path / "bad"), dataclasses.replace(loaded.config, extra=extra), params, loaded.tokenizer)
    return str(tmp_path / "bad")


@pytest.mark.parametrize("change, message", [
    (dict(features="bogus"), "config.json's npbert_features 'bogus' is not one of fine-tune, embeddings"),
    (dict(features="last"), "its scalar mix (scalar_mix.weights (4,), scalar_mix.gamma (1,)) does not fit "
                            "npbert_features last (which needs none)"),
    (dict(features="concat-last-four"), "classifier.weight has shape (7, 16) and classifier.bias (7,), which do "
                                        "not fit the width 64 of its features (npbert_features concat-last-four)"),
    (dict(features=None), "its scalar mix (scalar_mix.weights (4,), scalar_mix.gamma (1,)) does not fit "
                          "npbert_features fine-tune (which needs none)"),
    (dict(drop=("scalar_mix.gamma",)), "its scalar mix (scalar_mix.weights (4,)) does not fit npbert_features "
                                        "weighted-last-four (which needs scalar_mix.weights (4,), scalar_mix.gamma (1,))"),
])
def test_an_inconsistent_checkpoint_is_refused_with_one_line(trained, tmp_path, capsys, change, message):
    bad = edited(trained, tmp_path, **change)
    for command in (["evaluate", bad, "--task", "builtin-tagging", "--max-examples", "8"],
                    ["predict", bad, "--task", "builtin-tagging", "--input", str(tmp_path / "in.txt")]):
        (tmp_path / "in.txt").write_text("Anna lives in Paris .\n")
        capsys.readouterr()
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"npbert {command[0]}: error: ") and message in err and err.count("\n") == 1, err


def test_a_choice_the_checkpoint_has_too_few_layers_for_is_refused(trained, tmp_path):
    loaded = load_pretrained(trained, strict=False)
    config = dataclasses.replace(loaded.config, num_hidden_layers=2)
    params = {k: v for k, v in loaded.params.items() if not k.startswith("bert.encoder.layer.2.")}
    save_pretrained(str(tmp_path / "two"), config, params, loaded.tokenizer)
    with pytest.raises(CheckpointError, match=r"two: config.json's npbert_features weighted-last-four takes the last "
                                              r"four hidden states, and a 2-layer model has 3"):
        load_finetuned(str(tmp_path / "two"), TASKS["builtin-tagging"])


def test_a_training_state_that_freezes_an_unknown_tensor_is_refused(micro3, tmp_path):
    finetune(feature_options(micro3, tmp_path / "run", "builtin-sentence", "last", stop_after=1), **QUIET)
    path = tmp_path / "run" / "checkpoint" / "training_state.json"
    state = json.loads(path.read_text())
    path.write_text(json.dumps(dict(state, frozen=state["frozen"] + ["bert.nothing"])))
    with pytest.raises(CheckpointError, match="the training state freezes bert.nothing, which the model lacks"):
        finetune(FinetuneOptions(out=str(tmp_path / "run")), resume=True, **QUIET)


@pytest.mark.parametrize("task", ["builtin-sentence", "builtin-tagging", "builtin-qa", "builtin-choice"])
def test_every_head_continues_from_its_own_fine_tuned_checkpoint(micro3, tmp_path, task):
    """Fine-tuning again from a fine-tuned checkpoint of the same task keeps its head, weights and
    all (at learning rate 0 they come back unchanged), for every head: the check compares the head's
    rows (a choice head has 1 whatever the endings, a span head 2) with what the task needs."""
    first = finetune(feature_options(micro3, tmp_path / "first", task, "fine-tune", n=32), **QUIET)
    said = []
    finetune(feature_options(first["best"], tmp_path / "again", task, "fine-tune", n=32, learning_rate=0.0),
             log=said.append)
    architecture = TASKS[task].head.architecture
    assert any(f"continuing its {architecture} head" in s for s in said), said
    again, before = params_of(tmp_path / "again" / "best"), params_of(first["best"])
    head = [k for k in before if not k.startswith(("bert.", "cls."))]
    assert head and all(np.array_equal(again[k], before[k]) for k in head)
