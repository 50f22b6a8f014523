"""npbert.checkpoint: save/load round trips, HF naming variants, atomic saves, clear errors."""
import json
import os

import numpy as np
import pytest

import npbert.safetensors
from npbert.atomic import atomic_write
from npbert.checkpoint import check_checkpoint, load_pretrained, save_pretrained
from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.model import pretraining_forward
from npbert.model_params import init_params
from npbert.tokenizer import BertTokenizer

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
    with pytest.raises(CheckpointError, match="Unexpected tensors: classifier.weight"):
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
    assert "Missing tensors: bert.encoder.layer.1.output.dense.bias" in str(error.value)
    assert "bert.pooler.dense.weight: expected (8, 8), found (8, 4)" in str(error.value)


def test_partial_heads_name_the_missing_head_tensors(saved):
    directory, params = saved
    write_weights(directory, {n: a for n, a in params.items() if not n.startswith("cls.seq_relationship")})
    with pytest.raises(CheckpointError, match="Missing tensors: cls.seq_relationship.weight; "
                                              "cls.seq_relationship.bias"):
        load_pretrained(directory)


def test_config_that_does_not_match_the_weights(saved):
    # before: one ~700-character line of shapes ending "and 36 more", without the directory
    directory, _ = saved
    d = json.loads((directory / "config.json").read_text())
    d.update(hidden_size=16, num_attention_heads=2)
    (directory / "config.json").write_text(json.dumps(d))
    with pytest.raises(CheckpointError) as error:
        load_pretrained(directory)
    message = str(error.value)
    assert message.startswith(f"{directory}: the weights in model.safetensors do not match config.json. "
                              "config.json says hidden_size 16 but the weights are 8 wide. Wrong shapes: "
                              "bert.embeddings.word_embeddings.weight: expected (30, 16), found (30, 8); ")
    wrong = [n for n, a in make_params().items() if 8 in a.shape]
    assert message.endswith(f" and {len(wrong) - 3} more") and message.count("expected (") == 3


@pytest.mark.parametrize("field, value, says", [
    ("intermediate_size", 24, "config.json says intermediate_size 24 but the weights have feed-forward layers 12 wide"),
    ("vocab_size", 31, "config.json says vocab_size 31 but the weights have 30 word embeddings"),
    ("num_hidden_layers", 1, "config.json says num_hidden_layers 1 but the weights have 2 layers"),
    ("max_position_embeddings", 32, "config.json says max_position_embeddings 32 but the weights have 16 positions"),
    ("type_vocab_size", 3, "config.json says type_vocab_size 3 but the weights have 2 token types"),
])
def test_the_error_names_the_config_field_the_weights_contradict(saved, field, value, says):
    directory, _ = saved
    d = json.loads((directory / "config.json").read_text())
    d[field] = value
    (directory / "config.json").write_text(json.dumps(d))
    (directory / "vocab.txt").unlink()                  # else vocab_size 31 fails on vocab.txt first
    with pytest.raises(CheckpointError, match=says):
        load_pretrained(directory)
    with pytest.raises(CheckpointError, match=says):    # npbert info's check: the same, from the header only
        check_checkpoint(directory)


def test_check_checkpoint_reads_only_the_header(saved, monkeypatch):
    directory, params = saved
    monkeypatch.setattr(npbert.safetensors, "load_file", None)   # any tensor read would fail
    config, shapes = check_checkpoint(directory)
    assert config.to_dict() == CONFIG.to_dict() and shapes == {n: a.shape for n, a in params.items()}


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


@pytest.mark.parametrize("content", [b"[" * 100000, b"\xff\xfe{}", b"1" * 5000])
def test_a_config_json_that_json_cannot_read_is_a_checkpoint_error(tmp_path, content):
    """Nested too deep (RecursionError), not UTF-8, a 5000-digit integer: one clear error."""
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(CheckpointError, match="config.json is not valid JSON"):
        load_pretrained(str(tmp_path))


def test_a_corrupt_training_state_is_a_checkpoint_error(tmp_path):
    from npbert.training.state import STATE_ARRAYS, STATE_JSON, load_training_checkpoint
    config = BertConfig(vocab_size=8, hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8, max_position_embeddings=8)
    save_pretrained(str(tmp_path), config, init_params(config, np.random.default_rng(0)))
    good_json = json.dumps(dict(position=dict(step=1, epoch=0, batch=1), optimizer_t=1, options={"seed": 0},
                                dropout=dict(generator="splitmix64", seed=0))).encode()
    for arrays, state in ((b"", good_json), (b"PK\x03\x04 not a zip", good_json), (b"garbage", good_json),
                          (b"", b"[" * 100000), (b"", b"{}"), (b"", b"\xff")):
        (tmp_path / STATE_ARRAYS).write_bytes(arrays)
        (tmp_path / STATE_JSON).write_bytes(state)
        with pytest.raises(CheckpointError, match="the training state is corrupt"):
            load_training_checkpoint(str(tmp_path))
