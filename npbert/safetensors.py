"""Read and write .safetensors files with NumPy alone (docs/checkpoints.md).

    [8 bytes: N, little-endian u64] [N bytes: JSON header] [byte buffer]

The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}, offsets
relative to the start of the buffer, plus an optional "__metadata__": {str: str}. Tensors are
stored C-contiguous and little-endian. Files written here are what Hugging Face's `safetensors`
writes: header padded with spaces to a multiple of 8, offsets contiguous from 0 and sorted.
"""
from __future__ import annotations

import json
import math
import os
import reprlib
from collections.abc import Mapping

import numpy as np

from npbert.errors import JSON_ERRORS, CheckpointError

# safetensors dtype -> how its bytes read in NumPy. BF16 has no NumPy dtype: its 16 bits are
# read as uint16 and widened to float32 (they are the top half of a float32).
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
# (NumPy kind, itemsize) -> safetensors dtype, for writing; byte order does not matter here
WRITABLE = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in DTYPES.items() if k != "BF16"}
MAX_HEADER_BYTES = 100_000_000   # the limit Hugging Face's reader enforces
MAX_DIMS = 64                    # NumPy 2's limit; it also bounds the work of checking a shape


class _Brief(reprlib.Repr):
    """repr() cut short, for header values in error messages: a header can hold megabytes, and
    an integer past 4300 digits cannot even be converted to text."""

    def __init__(self):
        super().__init__()
        self.maxstring = self.maxother = 100

    def repr_int(self, x, level):
        return repr(x) if x.bit_length() <= 128 else f"<a {x.bit_length()}-bit integer>"


_brief = _Brief().repr


# --- reading --------------------------------------------------------------------------------------

def load_file(path) -> dict:
    """path -> {name: np.ndarray} in file order. BF16 tensors come back as float32.
    The header is checked before any tensor data is read, and only the bytes the tensors cover
    are read: memory never follows a size the file only claims."""
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        header_size = _read_header_size(f, file_size, path)
        header = _parse_header(f.read(header_size), path)
        entries = _check_entries(header, file_size - 8 - header_size, path)
        used = max((info["data_offsets"][1] for _, info in entries), default=0)
        buffer = np.empty(used, dtype=np.uint8)   # read once, writable views
        if f.readinto(memoryview(buffer)) != used:
            raise CheckpointError(f"{path}: the file got shorter while it was read")
    return {name: _tensor(buffer, name, info, path) for name, info in entries}


def load_metadata(path) -> dict:
    """The "__metadata__" of a file ({} if it has none), without reading the tensors."""
    with open(path, "rb") as f:
        header = _parse_header(f.read(_read_header_size(f, os.fstat(f.fileno()).st_size, path)), path)
    return header.get("__metadata__", {})


def load_shapes(path) -> dict:
    """path -> {name: (NumPy dtype as load_file returns it, shape)} in file order, from the header
    alone (checked as load_file checks it): no tensor data is read."""
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        header_size = _read_header_size(f, file_size, path)
        header = _parse_header(f.read(header_size), path)
    return {name: (np.dtype(np.float32 if info["dtype"] == "BF16" else DTYPES[info["dtype"]]), tuple(info["shape"]))
            for name, info in _check_entries(header, file_size - 8 - header_size, path)}


def _read_header_size(f, file_size, path) -> int:
    if file_size < 8:
        raise CheckpointError(f"{path}: truncated safetensors file ({file_size} bytes, the header "
                              "length alone takes 8)")
    n = int.from_bytes(f.read(8), "little")
    if n > file_size - 8:
        raise CheckpointError(f"{path}: header length {n} is larger than the rest of the file "
                              f"({file_size - 8} bytes): truncated or not a safetensors file")
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(f"{path}: header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
    return n


def _parse_header(raw: bytes, path) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"))
    except JSON_ERRORS as e:
        raise CheckpointError(f"{path}: header is not valid JSON ({e}): corrupt or not a safetensors file") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is JSON {type(header).__name__}, expected an object")
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise CheckpointError(f"{path}: __metadata__ must map strings to strings, got {_brief(meta)}")
    return header


def _check_entries(header: dict, buffer_size: int, path) -> list:
    """Validate every tensor entry against the buffer; -> [(name, info)] in header order."""
    entries = [(name, info) for name, info in header.items() if name != "__metadata__"]
    spans = []
    for name, info in entries:
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
            raise CheckpointError(f"{path}: tensor {_brief(name)} needs dtype, shape and data_offsets, "
                                  f"got {_brief(info)}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise CheckpointError(f"{path}: tensor {_brief(name)} has unknown dtype {_brief(dtype)}; "
                                  f"npbert reads {', '.join(DTYPES)}")
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            raise CheckpointError(f"{path}: tensor {_brief(name)} has invalid shape {_brief(shape)}")
        if len(shape) > MAX_DIMS:
            raise CheckpointError(f"{path}: tensor {_brief(name)} has invalid shape ({len(shape)} dimensions, "
                                  f"more than {MAX_DIMS})")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(o) for o in offsets)
                or offsets[0] > offsets[1]):
            raise CheckpointError(f"{path}: tensor {_brief(name)} has invalid data_offsets {_brief(offsets)}")
        begin, end = offsets
        if end > buffer_size:
            raise CheckpointError(f"{path}: tensor {_brief(name)} data_offsets {_brief(offsets)} go past the end "
                                  f"of the {buffer_size}-byte buffer: truncated file?")
        expected = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize   # exact: an int64 product wraps
        if end - begin != expected:
            raise CheckpointError(f"{path}: tensor {_brief(name)} holds {end - begin} bytes but shape "
                                  f"{_brief(shape)} of {dtype} needs {_brief(expected)} bytes")
        spans.append((begin, end, name))
    spans.sort()
    for (_, prev_end, prev), (begin, _, name) in zip(spans, spans[1:]):
        if begin < prev_end:
            raise CheckpointError(f"{path}: tensors {_brief(prev)} and {_brief(name)} overlap in the buffer")
    return entries


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _tensor(buffer: np.ndarray, name: str, info: dict, path) -> np.ndarray:
    begin, end = info["data_offsets"]
    try:
        a = buffer[begin:end].view(DTYPES[info["dtype"]]).reshape(info["shape"])
    except ValueError as e:   # an empty shape NumPy cannot hold, e.g. (2**63, 0), or NumPy 1's 32-dim limit
        raise CheckpointError(f"{path}: tensor {_brief(name)} has shape {_brief(info['shape'])}, which NumPy "
                              f"cannot hold ({e})") from None
    if info["dtype"] == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)   # bf16 = the high 16 bits of a float32
    return a


# --- writing --------------------------------------------------------------------------------------

def save_file(tensors: Mapping, path, metadata: Mapping | None = None) -> None:
    """Write {name: array} to path as safetensors, with optional string metadata."""
    header, arrays = _layout(tensors, metadata)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for a in arrays:
            f.write(a.data)


def _layout(tensors: Mapping, metadata) -> tuple:
    """-> (padded header bytes, little-endian contiguous arrays in buffer order)."""
    if not isinstance(tensors, Mapping):
        raise CheckpointError(f"tensors must be a dict of name -> array, got {type(tensors).__name__}")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise CheckpointError(f"tensor name {name!r} is not allowed (names are strings, not '__metadata__')")
        a = np.asarray(value)
        st_dtype = WRITABLE.get((a.dtype.kind, a.dtype.itemsize))
        if st_dtype is None:
            raise CheckpointError(f"tensor {name!r} has dtype {a.dtype}, which safetensors cannot store")
        arrays[name] = (st_dtype, a.shape, np.ascontiguousarray(a, dtype=DTYPES[st_dtype]))
    # Widest items first, then by name: with the header padded to 8, every tensor then starts at a
    # multiple of its own item size, so a reader can view it in place (what Hugging Face does too).
    order = sorted(arrays, key=lambda n: (-arrays[n][2].itemsize, n))
    header, offset = {}, 0
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in metadata.items()):
            raise CheckpointError(f"metadata must map strings to strings, got {metadata!r}")
        header["__metadata__"] = dict(metadata)
    for name in order:
        st_dtype, shape, a = arrays[name]
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return raw, [arrays[name][2] for name in order]
