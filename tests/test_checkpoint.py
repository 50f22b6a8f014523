"""npbert.checkpoint: save/load round trips, HF naming variants, atomic saves, clear errors."""
import json
import os

import numpy as np
import pytest

import npbert.safetensors
from npbert.atomic import atomic_write
from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.model import init_params, pretraining_forward
from npbert.tokenization import BertTokenizer

CONFIG = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=12, max_position_embeddings=16)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]


def make_params(seed=0, dtype=np.float32, heads=True):
    rng = np.random.default_rng(seed)
    params = init_params(CONFIG, rng, dtype, heads)
    for a in params.values():   # non-trivial LayerNorm/bias values, so a mix-up would show
        a += rng.normal(0, 0.1, a.shape).astype(dtype)
    return params


def logits(params):
    ids = np.array([[2, 7, 4, 9, 3, 0], [2, 11, 3, 12, 4, 3]])
    out, _ = pretraining_forward(params, CONFIG, ids, token_type_ids=[[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]],
                                 attention_mask=[[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]],
                                 mlm_positions=[2, 10], mlm_labels=[5, 6], nsp_labels=[0, 1])
    return out["mlm_logits"], out["nsp_logits"], out["loss"]


def assert_same(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert a[name].tobytes() == b[name].tobytes(), name      # bit for bit


@pytest.fixture
def saved(tmp_path):
    params = make_params()
    save_pretrained(tmp_path / "ckpt", CONFIG, params, VOCAB)
    return tmp_path / "ckpt", params


# --- round trips -----------------------------------------------------------------------------------

def test_round_trip_is_bit_exact_and_gives_the_same_logits(saved):
    directory, params = saved
    assert sorted(os.listdir(directory)) == ["config.json", "model.safetensors", "vocab.txt"]
    model = load_pretrained(directory)
    assert model.config.to_dict() == CONFIG.to_dict()
    assert_same(model.params, params)
    for before, after in zip(logits(params), logits(model.params)):
        assert np.array_equal(before, after)
    assert (directory / "vocab.txt").read_text().split("\n")[:-1] == VOCAB


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_load_casts_to_the_requested_dtype(tmp_path, dtype):
    params = make_params(dtype=np.float64)
    save_pretrained(tmp_path / "c", CONFIG, params)
    loaded = load_pretrained(tmp_path / "c", dtype=dtype).params
    assert all(a.dtype == dtype for a in loaded.values())
    assert all(np.array_equal(loaded[n], params[n].astype(dtype)) for n in params)


def test_checkpoint_without_heads_loads_without_heads(tmp_path):
    params = make_params(heads=False)
    save_pretrained(tmp_path / "c", CONFIG, params)
    loaded = load_pretrained(tmp_path / "c").params
    assert all(name.startswith("bert.") for name in loaded)
    assert_same(loaded, params)


def test_save_over_an_existing_checkpoint_replaces_it(saved):
    directory, _ = saved
    newer = make_params(seed=1)
    save_pretrained(directory, CONFIG, newer, VOCAB, extra_files={"training_state.json": '{"step": 7}'})
    assert_same(load_pretrained(directory).params, newer)
    assert json.loads((directory / "training_state.json").read_text()) == {"step": 7}
    assert sorted(os.listdir(directory.parent)) == ["ckpt"]     # no temporary or old directories left


# --- Hugging Face naming variants -------------------------------------------------------------------

def write_weights(directory, tensors):
    npbert.safetensors.save_file(tensors, os.path.join(directory, "model.safetensors"), {"format": "pt"})


def test_reads_hf_names_without_prefix_and_with_buffers(saved):
    # a BertModel checkpoint: no "bert." prefix, position_ids buffer, TF-style LayerNorm names
    directory, params = saved
    tensors = {name.removeprefix("bert."): a for name, a in params.items() if name.startswith("bert.")}
    tensors["embeddings.position_ids"] = np.arange(16)[None]
    tensors["embeddings.LayerNorm.gamma"] = tensors.pop("embeddings.LayerNorm.weight")
    tensors["embeddings.LayerNorm.beta"] = tensors.pop("embeddings.LayerNorm.bias")
    write_weights(directory, tensors)
    assert_same(load_pretrained(directory).params, {n: a for n, a in params.items() if n.startswith("bert.")})


def test_tied_decoder_tensors_are_accepted_when_equal(saved):
    directory, params = saved
    write_weights(directory, {**params, "cls.predictions.decoder.weight": params["bert.embeddings.word_embeddings.weight"],
                              "cls.predictions.decoder.bias": params["cls.predictions.bias"]})
    assert_same(load_pretrained(directory).params, params)


def test_tied_decoder_that_differs_is_an_error(saved):
    directory, params = saved
    write_weights(directory, {**params, "cls.predictions.decoder.weight": params["bert.embeddings.word_embeddings.weight"] + 1})
    with pytest.raises(CheckpointError, match="cls.predictions.decoder.weight differs from "
                                              "bert.embeddings.word_embeddings.weight"):
        load_pretrained(directory)


def test_unexpected_tensor_is_an_error_unless_not_strict(saved):
    directory, params = saved
    write_weights(directory, {**params, "classifier.weight": np.zeros((2, 8), np.float32)})
    with pytest.raises(CheckpointError, match="unexpected tensors: classifier.weight"):
        load_pretrained(directory)
    assert load_pretrained(directory, strict=False).params["classifier.weight"].shape == (2, 8)


# --- atomic saves ------------------------------------------------------------------------------------

def test_crash_while_writing_weights_leaves_the_previous_checkpoint(saved, monkeypatch):
    directory, params = saved
    before = {name: (directory / name).read_bytes() for name in os.listdir(directory)}
    real_save_file = npbert.safetensors.save_file

    def crash_half_way(tensors, path, metadata=None):
        real_save_file(tensors, path, metadata)
        with open(path, "r+b") as f:         # as if the process died half way through the file
            f.truncate(os.path.getsize(path) // 2)
        raise OSError("No space left on device")

    monkeypatch.setattr(npbert.safetensors, "save_file", crash_half_way)
    with pytest.raises(OSError, match="No space left"):
        save_pretrained(directory, CONFIG, make_params(seed=1), VOCAB)
    assert {name: (directory / name).read_bytes() for name in os.listdir(directory)} == before
    assert_same(load_pretrained(directory).params, params)
    assert sorted(os.listdir(directory.parent)) == ["ckpt"]


def test_crash_during_the_swap_puts_the_previous_checkpoint_back(saved, monkeypatch):
    directory, params = saved
    real_rename = os.rename

    def fail_moving_the_new_one_in(src, dst):
        if ".tmp-" in os.fspath(src):
            raise OSError("simulated failure renaming the new checkpoint into place")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", fail_moving_the_new_one_in)
    with pytest.raises(OSError, match="simulated"):
        save_pretrained(directory, CONFIG, make_params(seed=1), VOCAB)
    monkeypatch.undo()
    assert_same(load_pretrained(directory).params, params)
    assert sorted(os.listdir(directory.parent)) == ["ckpt"]


def test_interrupted_swap_is_explained(saved):
    directory, _ = saved
    os.rename(directory, directory.parent / ".ckpt.old-123-abcd")   # a crash between the two renames
    with pytest.raises(CheckpointError, match=r"does not exist; a save was interrupted and left the "
                                              r"previous checkpoint at .*\.ckpt\.old-123-abcd"):
        load_pretrained(directory)


def test_atomic_write(tmp_path, monkeypatch):
    path = tmp_path / "state.bin"
    atomic_write(path, lambda f: f.write(b"first"))
    atomic_write(path, lambda f: f.write(b"second"))
    assert path.read_bytes() == b"second"

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        atomic_write(path, lambda f: f.write(b"third"))
    assert path.read_bytes() == b"second"
    assert os.listdir(tmp_path) == ["state.bin"]


# --- errors ------------------------------------------------------------------------------------------

def test_missing_files(saved):
    directory, _ = saved
    os.remove(directory / "model.safetensors")
    with pytest.raises(CheckpointError, match="no model.safetensors in"):
        load_pretrained(directory)
    os.remove(directory / "config.json")
    with pytest.raises(CheckpointError, match="no config.json in"):
        load_pretrained(directory)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_pretrained(directory / "nowhere")


def test_missing_and_wrong_shaped_tensors(saved):
    directory, params = saved
    broken = dict(params)
    del broken["bert.encoder.layer.1.output.dense.bias"]
    broken["bert.pooler.dense.weight"] = np.zeros((8, 4), np.float32)
    write_weights(directory, broken)
    with pytest.raises(CheckpointError) as error:
        load_pretrained(directory)
    assert "missing tensors: bert.encoder.layer.1.output.dense.bias" in str(error.value)
    assert "bert.pooler.dense.weight: expected (8, 8), found (8, 4)" in str(error.value)


def test_partial_heads_name_the_missing_head_tensors(saved):
    directory, params = saved
    write_weights(directory, {n: a for n, a in params.items() if not n.startswith("cls.seq_relationship")})
    with pytest.raises(CheckpointError, match="missing tensors: cls.seq_relationship.weight, "
                                              "cls.seq_relationship.bias"):
        load_pretrained(directory)


def test_config_that_does_not_match_the_weights(saved):
    directory, _ = saved
    d = json.loads((directory / "config.json").read_text())
    d.update(hidden_size=16, num_attention_heads=2)
    (directory / "config.json").write_text(json.dumps(d))
    with pytest.raises(CheckpointError, match=r"bert.embeddings.word_embeddings.weight: expected \(30, 16\), "
                                              r"found \(30, 8\)"):
        load_pretrained(directory)


def test_bad_config_json(saved):
    directory, _ = saved
    (directory / "config.json").write_text("{ not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_pretrained(directory)


def test_vocab_size_mismatch(saved):
    directory, params = saved
    (directory / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB[:-2]))
    with pytest.raises(CheckpointError, match="has 28 tokens but config.json says vocab_size = 30"):
        load_pretrained(directory)
    with pytest.raises(CheckpointError, match="has 29 tokens but config.json says vocab_size = 30"):
        save_pretrained(directory, CONFIG, params, VOCAB[:-1])


def test_save_rejects_params_that_do_not_match_the_config(tmp_path):
    params = make_params()
    params["bert.embeddings.LayerNorm.bias"] = np.zeros(9, np.float32)
    with pytest.raises(CheckpointError, match=r"bert.embeddings.LayerNorm.bias: expected \(8,\), found \(9,\)"):
        save_pretrained(tmp_path / "c", CONFIG, params)
    assert not os.path.exists(tmp_path / "c")


def test_vocabulary_forms(tmp_path):
    params = make_params()
    ids = {token: i for i, token in enumerate(VOCAB)}
    save_pretrained(tmp_path / "a", CONFIG, params, ids)
    save_pretrained(tmp_path / "b", CONFIG, params, tmp_path / "a" / "vocab.txt")
    assert (tmp_path / "a" / "vocab.txt").read_bytes() == (tmp_path / "b" / "vocab.txt").read_bytes()
    with pytest.raises(CheckpointError, match="cannot be written as one line"):
        save_pretrained(tmp_path / "c", CONFIG, params, VOCAB[:-1] + ["two\nlines"])


def test_tokenizer_is_loaded_from_vocab_txt_and_absent_without_it(saved, tmp_path):
    directory, params = saved
    tokenizer = load_pretrained(directory).tokenizer
    assert tokenizer.vocab == {t: i for i, t in enumerate(VOCAB)} and tokenizer.do_lower_case is True
    assert tokenizer("W3 w7 zz")["input_ids"] == [2, 8, 12, 1, 3]   # [CLS] w3 w7 [UNK] [SEP], lower-cased
    save_pretrained(tmp_path / "weights-only", CONFIG, params)
    assert load_pretrained(tmp_path / "weights-only").tokenizer is None


def test_tokenizer_settings_are_saved_with_it(saved):
    directory, params = saved
    cased = BertTokenizer(VOCAB, do_lower_case=False)
    save_pretrained(directory, CONFIG, params, cased)
    tokenizer = load_pretrained(directory).tokenizer
    assert tokenizer.do_lower_case is False and tokenizer.vocab == cased.vocab
    assert (directory / "vocab.txt").read_text().split("\n")[:-1] == VOCAB
