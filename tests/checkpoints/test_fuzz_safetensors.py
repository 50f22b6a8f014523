"""Fuzzing the safetensors reader: whatever the bytes, load_file and load_metadata return what the
file holds or raise a one-line CheckpointError, never another exception, and never allocate
memory for a size the file only claims. Hand-written cases first (each a regression test for a
bug fuzzing found, or a case the format's readers are known to get wrong), then properties."""
import json
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from npbert.errors import CheckpointError
from npbert.safetensors import DTYPES, load_file, load_metadata, save_file
from support.fuzzing import JSON, fuzz, mutated, outcome, peak_bytes

SMALL = 1 << 20   # more memory than any of these small files needs (a 2^63-byte claim needs 2^63)


def raw_file(header, buffer=b"") -> bytes:
    """A file built by hand: header is a dict (dumped as JSON) or the header's exact bytes."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + buffer


def load(tmp_path, data: bytes):
    path = tmp_path / "f.safetensors"
    path.write_bytes(data)
    return load_file(path)


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


# --- hand-written cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("claimed", [2**63, 2**64 - 1, 2**63 - 1, 2**32, 20])
def test_header_length_past_the_end_fails_before_reading_it(tmp_path, claimed):
    path = tmp_path / "f.safetensors"
    path.write_bytes(struct.pack("<Q", claimed) + b'{"__metadata__":{}}')
    for read in (load_file, load_metadata):
        error, peak = peak_bytes(read, path)
        assert isinstance(error, CheckpointError) and f"header length {claimed} is larger" in str(error)
        assert peak < SMALL


def sparse_file(tmp_path, start: bytes, size: int):
    """A file of `size` bytes that starts with `start`; the rest is a hole, it takes no disk."""
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as f:
        f.write(start)
        f.truncate(size)
    return path


def test_header_length_over_the_limit_fails_before_reading_it(tmp_path):
    path = sparse_file(tmp_path, struct.pack("<Q", 2**31), 2**31 + 8)      # the length fits the 2 GB file
    error, peak = peak_bytes(load_file, path)
    assert isinstance(error, CheckpointError) and "exceeds the 100000000-byte limit" in str(error)
    assert peak < SMALL


def test_a_bad_entry_fails_before_the_data_is_read(tmp_path):
    # Fixed bug: the whole buffer was allocated and read before the header's entries were checked.
    path = sparse_file(tmp_path, raw_file({"x": entry(dtype="F8_E4M3")}), 2**30)   # then 1 GB of data
    error, peak = peak_bytes(load_file, path)
    assert isinstance(error, CheckpointError) and "unknown dtype 'F8_E4M3'" in str(error)
    assert peak < SMALL


def test_only_the_bytes_the_tensors_cover_are_read(tmp_path):
    path = sparse_file(tmp_path, raw_file({"x": entry("U8", (3,), (0, 3))}, b"abc"), 2**30)   # + 1 GB no tensor covers
    tensors, peak = peak_bytes(load_file, path)
    assert bytes(tensors["x"]) == b"abc" and peak < SMALL


@pytest.mark.parametrize("header, message", [
    (b"", "header is not valid JSON"),
    (b"\xff\xfe{\x00}\x00", "header is not valid JSON"),                 # UTF-16, not UTF-8
    (b'{"x": "\xc3"}', "header is not valid JSON"),                      # a cut UTF-8 sequence
    (b"\xef\xbb\xbf{}", "header is not valid JSON"),                     # a BOM: JSON forbids it
    (b"{} {}", "header is not valid JSON"),
    (b"[" * 100_000, "header is not valid JSON"),                        # fixed: RecursionError
    (b'{"a":' * 100_000, "header is not valid JSON"),                    # fixed: RecursionError
    (b'{"x": ' + b"9" * 5000 + b"}", "header is not valid JSON"),        # fixed: ValueError (int digits)
    (b"null", "header is JSON NoneType, expected an object"),
    (b'"{}"', "header is JSON str, expected an object"),
    (b"[]", "header is JSON list, expected an object"),
])
def test_header_that_is_not_a_json_object(tmp_path, header, message):
    for read in (load_file, load_metadata):
        path = tmp_path / "f.safetensors"
        path.write_bytes(raw_file(header))
        with pytest.raises(CheckpointError, match=message):
            read(path)


@pytest.mark.parametrize("info, message", [
    ("F32", "needs dtype, shape and data_offsets"),
    ([], "needs dtype, shape and data_offsets"),
    ({"dtype": "F32", "shape": [2]}, "needs dtype, shape and data_offsets"),
    (entry(dtype="F8_E4M3"), "unknown dtype 'F8_E4M3'"),
    (entry(dtype="f32"), "unknown dtype 'f32'"),
    (entry(dtype=None), "unknown dtype None"),
    (entry(dtype=["F32"]), r"unknown dtype \['F32'\]"),                 # fixed: TypeError (unhashable)
    (entry(dtype={"F32": 1}), r"unknown dtype \{'F32': 1\}"),           # fixed: TypeError (unhashable)
    ({**entry(), "shape": "2"}, "invalid shape '2'"),
    ({**entry(), "shape": None}, "invalid shape None"),
    (entry(shape=[-1]), r"invalid shape \[-1\]"),
    (entry(shape=[2.0]), r"invalid shape \[2.0\]"),
    (entry(shape=[True, 2]), r"invalid shape \[True, 2\]"),
    (entry(shape=[[2]]), r"invalid shape \[\[2\]\]"),
    (entry(shape=[1] * 65), r"invalid shape \(65 dimensions, more than 64\)"),  # fixed: NumPy's ValueError
    (entry(shape=[2**64], offsets=(0, 8)), "needs 73786976294838206464 bytes"),  # fixed: OverflowError
    (entry(shape=[2**32, 2**32], offsets=(0, 0)), "needs 73786976294838206464 bytes"),  # fixed: wrapped to 0
    (entry("U8", [2**62, 4], (0, 0)), "holds 0 bytes but shape .* needs 18446744073709551616"),  # fixed: wrapped
    (entry("U8", [2**63, 0], (0, 0)), "NumPy cannot hold"),             # fixed: NumPy's ValueError
    (entry(shape=[3]), "holds 8 bytes but shape \\[3\\] of F32 needs 12"),
    ({**entry(), "data_offsets": [0]}, r"invalid data_offsets \[0\]"),
    ({**entry(), "data_offsets": [0, 8, 8]}, r"invalid data_offsets \[0, 8, 8\]"),
    ({**entry(), "data_offsets": "0-8"}, "invalid data_offsets '0-8'"),
    (entry(offsets=(8, 0)), r"invalid data_offsets \[8, 0\]"),              # backwards
    (entry(offsets=(-8, 0)), r"invalid data_offsets \[-8, 0\]"),
    (entry(offsets=(0.0, 8.0)), r"invalid data_offsets \[0.0, 8.0\]"),
    (entry(offsets=(8, 16)), r"data_offsets \[8, 16\] go past the end of the 8-byte buffer"),
    (entry(offsets=(2**64, 2**64 + 8)), "go past the end"),
])
def test_bad_tensor_entry(tmp_path, info, message):
    with pytest.raises(CheckpointError, match=message):
        load(tmp_path, raw_file({"x": info}, bytes(8)))


@pytest.mark.parametrize("spans", [[(0, 8), (4, 12)], [(4, 12), (0, 8)], [(0, 8), (0, 8)], [(0, 12), (4, 8)]])
def test_overlapping_tensors(tmp_path, spans):
    header = {name: entry(shape=[(end - begin) // 4], offsets=(begin, end)) for name, (begin, end) in zip("xy", spans)}
    with pytest.raises(CheckpointError, match="overlap in the buffer"):
        load(tmp_path, raw_file(header, bytes(12)))


def test_tensors_out_of_order_and_empty_ones_are_fine(tmp_path):
    header = {"y": entry("U8", [2], (2, 4)), "e": entry("F64", [0, 5], (2, 2)), "x": entry("U8", [2], (0, 2))}
    tensors = load(tmp_path, raw_file(header, b"abcd"))
    assert list(tensors) == ["y", "e", "x"]                                    # in header order
    assert bytes(tensors["x"]) == b"ab" and bytes(tensors["y"]) == b"cd" and tensors["e"].shape == (0, 5)


@pytest.mark.parametrize("metadata", [None, [], "x", 3, {"epoch": 3}, {"a": None}, {"a": {"b": "c"}}, {"a": ["b"]}])
def test_odd_metadata(tmp_path, metadata):
    for read in (load_file, load_metadata):
        path = tmp_path / "f.safetensors"
        path.write_bytes(raw_file({"__metadata__": metadata}))
        with pytest.raises(CheckpointError, match="__metadata__ must map strings to strings"):
            read(path)


@pytest.mark.parametrize("header", [
    {"x": {"dtype": "F32", "shape": list(range(200_000))}},          # fixed: megabytes on one line
    {"x": entry(dtype="F" * 10**6)},
    {"x": entry(shape=[-1] + list(range(200_000)))},
    {"x": entry(offsets=list(range(200_000)))},
    {"x": entry(offsets=(0, 10**4000))},                               # fixed: 4000 digits on one line
    {"x": entry(shape=[10**4000, 10**4000], offsets=(0, 8))},          # fixed: ValueError: int of 8000 digits
    {"n" * 10**6: entry(dtype="F8_E4M3")},
    {"__metadata__": {"a": list(range(200_000))}},
])
def test_messages_stay_short_whatever_the_header_holds(tmp_path, header):
    error = outcome(load, tmp_path, raw_file(header, bytes(8)))
    assert isinstance(error, CheckpointError) and len(str(error)) < 500


def test_every_truncation_of_a_valid_file_fails_cleanly(tmp_path):
    path = tmp_path / "good.safetensors"
    save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(3, dtype=np.int8),
               "c": np.zeros((0, 2), np.float64)}, path, {"format": "pt"})
    data = path.read_bytes()
    for cut in range(len(data)):
        error = outcome(load, tmp_path, data[:cut])
        assert isinstance(error, CheckpointError), f"truncated to {cut} of {len(data)} bytes: {error!r}"


# --- properties -----------------------------------------------------------------------------------

NUMPY_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                np.uint64, np.uint32, np.uint16, np.uint8, np.bool_]
names = st.text(max_size=8).filter(lambda s: s != "__metadata__")
arrays = st.sampled_from(NUMPY_DTYPES).flatmap(
    lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)))
valid_files = st.builds(lambda tensors, metadata: (tensors, metadata),
                        st.dictionaries(names, arrays, max_size=4),
                        st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One directory for all the examples of this module (each overwrites the same files)."""
    return tmp_path_factory.mktemp("fuzz")


def written(tmp_path, tensors, metadata) -> bytes:
    path = tmp_path / "valid.safetensors"
    save_file(tensors, path, metadata)
    return path.read_bytes()


def check_against_the_file(tensors, data: bytes):
    """What load_file returned is what the bytes say, read with struct and json alone."""
    (n,) = struct.unpack("<Q", data[:8])
    header, buffer = json.loads(data[8:8 + n]), data[8 + n:]
    assert list(tensors) == [k for k in header if k != "__metadata__"]
    for name, a in tensors.items():
        info = header[name]
        begin, end = info["data_offsets"]
        assert a.shape == tuple(info["shape"])
        if info["dtype"] == "BF16":
            assert a.dtype == np.float32 and (a.view("<u4") >> 16).astype("<u2").tobytes() == buffer[begin:end]
        else:
            assert a.dtype == np.dtype(DTYPES[info["dtype"]]) and a.tobytes() == buffer[begin:end]


def check_any_file(tmp_path, data: bytes):
    """The fuzz verdict: tensors that match the bytes, or a CheckpointError; memory bounded by
    the file's real size (a claimed size is never allocated)."""
    result, peak = peak_bytes(load, tmp_path, data)
    assert peak < SMALL + 4 * len(data)
    if not isinstance(result, CheckpointError):
        check_against_the_file(result, data)
        metadata = load_metadata(tmp_path / "f.safetensors")
        assert isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())


@fuzz
@given(tensors_metadata=valid_files)
def test_valid_files_round_trip_bit_exactly(work, tensors_metadata):
    tensors, metadata = tensors_metadata
    back = load(work, written(work, tensors, metadata))
    assert list(sorted(back)) == sorted(tensors)
    for name, a in tensors.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape and back[name].tobytes() == a.tobytes()
    assert load_metadata(work / "f.safetensors") == (metadata or {})


@fuzz
@given(data=st.binary(max_size=256))
def test_random_bytes(work, data):
    check_any_file(work, data)


@fuzz
@given(header=st.binary(max_size=256) | st.text(max_size=64).map(str.encode), buffer=st.binary(max_size=32))
def test_random_header_bytes_with_a_right_length(work, header, buffer):
    check_any_file(work, raw_file(header, buffer))


COUNTS = (st.integers(0, 16) | st.integers(-2, -1) | st.integers(0, 2**70)
          | st.sampled_from([2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64]))
ENTRIES = (st.fixed_dictionaries({"dtype": st.sampled_from(list(DTYPES)) | st.text(max_size=5) | JSON,
                                  "shape": st.lists(COUNTS, max_size=4) | JSON,
                                  "data_offsets": st.lists(COUNTS, min_size=2, max_size=2)
                                  | st.lists(COUNTS, max_size=3) | JSON})
           | JSON)


@fuzz
@given(entries=st.dictionaries(names, ENTRIES, max_size=4),
       metadata=st.just({}) | st.dictionaries(st.text(max_size=4), st.text(max_size=4) | JSON, max_size=2) | JSON,
       buffer=st.binary(max_size=64))
def test_random_headers(work, entries, metadata, buffer):
    """Entries of the right form with random values in every field (the structure-aware fuzzer)."""
    header = entries if metadata == {} else {"__metadata__": metadata, **entries}
    check_any_file(work, raw_file(header, buffer))


@fuzz
@given(data=st.data(), tensors_metadata=valid_files)
def test_mutated_valid_files(work, data, tensors_metadata):
    check_any_file(work, data.draw(mutated(written(work, *tensors_metadata))))


@fuzz
@given(data=st.data(), tensors_metadata=valid_files)
def test_bytes_of_the_data_are_read_verbatim(work, data, tensors_metadata):
    """Flipped bits after the header: the file still loads, and holds the flipped bytes."""
    good = bytearray(written(work, *tensors_metadata))
    start = 8 + struct.unpack("<Q", good[:8])[0]
    if start < len(good):
        for at in data.draw(st.lists(st.integers(start, len(good) - 1), max_size=4)):
            good[at] ^= data.draw(st.integers(1, 255))
    check_against_the_file(load(work, bytes(good)), bytes(good))


@fuzz
@given(tensors_metadata=valid_files, data=st.data())
def test_truncated_valid_files(work, tensors_metadata, data):
    """Every prefix of a file save_file wrote fails: the header or a tensor runs past the end."""
    good = written(work, *tensors_metadata)
    cut = data.draw(st.integers(0, len(good) - 1))
    assert isinstance(outcome(load, work, good[:cut]), CheckpointError)

