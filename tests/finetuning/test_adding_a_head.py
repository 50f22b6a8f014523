"""docs/heads.md's claim, checked: a new head is one file (tests/support/toy_head.py) plus one entry in
the list of heads, and then it is gradient-checked, fine-tuned, evaluated and predicts through
the same code as the built-in heads: finetune(), and `npbert evaluate` / `npbert predict`."""
import numpy as np
import pytest
from support import toy_head
from support.random_models import micro  # noqa: F401  (a fixture)

from npbert.cli import main
from npbert.commands.predict_lines import LINES
from npbert.config import BertConfig
from npbert.finetuning.recipe import FinetuneOptions, finetune
from npbert.gradcheck import Dims, check, run_gradchecks
from npbert.heads.registry import HEADS
from npbert.heads.task_model import model_of
from npbert.model_params import init_params
from npbert.tasks.registry import TASKS, Task
from npbert.trace import NO_TRACE

WORDS = ["the", "city", "river", "doctor", "lives", "in", "a", "house", "near", "old"]


def read_toy(split):
    """Texts of 2 to 9 words, "long" from 6 words on; the split name seeds them."""
    rng = np.random.default_rng(dict(train=0, dev=1, test=2)[split])
    texts = [" ".join(rng.choice(WORDS, rng.integers(2, 10))) for _ in range(120 if split == "train" else 40)]
    return [dict(text=t, text_pair=None, label="long" if len(t.split()) >= 6 else "short", where=f"{split}:{i}")
            for i, t in enumerate(texts)]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(HEADS, toy_head.HEAD.name, toy_head.HEAD)          # the one line a new head adds
    task = Task("toy-length", toy_head.HEAD, toy_head.FORMAT, read_toy, ("accuracy",), ("short", "long"),
                generated=True, max_seq_length=16)
    monkeypatch.setitem(TASKS, task.name, task)                            # and a task that uses it
    monkeypatch.setitem(LINES, toy_head.FORMAT, toy_head.ToyLines())       # which predict reads and prints its way
    return task


def test_the_toy_head_is_a_layer_pair_that_passes_the_gradient_check(toy):
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((3, 4)), "toy.weight": rng.standard_normal((2, 4)), "toy.bias": np.zeros(2)}
    config, targets = BertConfig(), dict(labels=np.array([0, 1, 1]))

    def run(p):
        out, cache = toy_head.HEAD.forward(p["x"], p, config, targets, None, NO_TRACE)
        return out["loss"], cache

    def backward(dloss, cache):
        dx, grads = toy_head.HEAD.backward(dloss, cache, NO_TRACE)
        return {"x": dx, **grads}
    r = check("toy_head", inputs, run, backward)
    assert r.passed and r.max_error < 1e-6, r.errors
    # and over BertModel, through the one model path every head takes (every parameter, float64)
    config = BertConfig(vocab_size=12, hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=4, max_position_embeddings=8, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    params = {k: v * 10 if v.ndim == 2 else v for k, v in init_params(config, rng, np.float64, heads=False).items()}
    params.update({"toy.weight": rng.standard_normal((2, 4)), "toy.bias": rng.standard_normal(2)})
    forward, model_backward = model_of(config, toy.head)
    ids = rng.integers(0, 12, (2, 5))
    r = check("bert_for_toy", params, lambda p: _loss(forward(p, config, ids, labels=np.array([1, 0]))),
              model_backward)
    assert r.passed and r.max_error < 1e-6, r.errors


def test_npbert_gradcheck_takes_its_rows_from_the_list_of_heads(toy):
    # the entry in HEADS is all it takes: the head alone, over BertModel, and on frozen features
    rows = ["toy_head", "bert_for_toy_length", "feature_based[toy_length]"]
    for r in run_gradchecks(Dims(), names=rows):
        assert r.passed and r.max_error < 1e-6, (r.name, r.errors)


def _loss(out_and_cache):
    out, cache = out_and_cache
    return out["loss"], cache


def test_a_toy_head_trains_evaluates_and_predicts_through_the_cli_code_paths(toy, micro, tmp_path, capsys):
    said = []
    result = finetune(FinetuneOptions(task=toy.name, model=micro, out=str(tmp_path / "run"), epochs=2,
                                      batch_size=16, learning_rate=1e-3), log=said.append)
    assert any("BertForToyLength" in s for s in said) and result["epoch"] in (1, 2)
    assert any(s.startswith("dev baseline") for s in said)
    best = result["best"]

    assert main(["evaluate", best, "--task", toy.name, "--json"]) == 0
    import json
    scores = json.loads(capsys.readouterr().out)
    assert scores["accuracy"] == pytest.approx(result["accuracy"], abs=1e-12)    # the dev set, the best model

    lines = tmp_path / "in.txt"
    lines.write_text("the city\n\nthe old doctor lives in a house near the river\n")
    assert main(["predict", best, "--task", toy.name, "--input", str(lines)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1] == "(empty)"                            # one line per input line
    assert out[0].endswith("(2 words)") and out[2].endswith("(10 words)")
    assert all(o.split()[0] in ("short", "long") for o in (out[0], out[2]))
