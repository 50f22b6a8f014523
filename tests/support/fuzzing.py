"""What the fuzz tests (tests/*/test_fuzz_*.py) share: the example budget, byte mutations, and the
one verdict they all check: a reader returns a result or raises an npbert error, nothing else.

NPBERT_FUZZ_EXAMPLES sets how many examples each fuzz target runs: the default keeps CI fast;
set it to 5000 or more for a long run before a release (docs/checkpoints.md, "Fuzzing")."""
import os
import tracemalloc

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from npbert.errors import NpbertError

EXAMPLES = int(os.environ.get("NPBERT_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Bytes that mean something to some reader: JSON, CSV and TSV syntax, line ends, a UTF-8 BOM,
# bytes that are never valid UTF-8, and the start of a multi-byte sequence.
SPECIAL_BYTES = list(b'{}[]":,\t\n\r "\\0123456789-.eE') + [0x00, 0xEF, 0xBB, 0xBF, 0xFF, 0xC3, 0x80, 0xE4]


@st.composite
def mutated(draw, data: bytes, max_edits: int = 4) -> bytes:
    """data after 1..max_edits random edits: a flipped bit, a byte overwritten, bytes inserted
    or deleted, or the end cut off."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, max_edits))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, len(out)))
        if kind == "flip" and at < len(out):
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and at < len(out):
            out[at] = draw(st.sampled_from(SPECIAL_BYTES) | st.integers(0, 255))
        elif kind == "insert":
            out[at:at] = draw(st.lists(st.sampled_from(SPECIAL_BYTES) | st.integers(0, 255), min_size=1, max_size=8))
        elif kind == "delete":
            del out[at:at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del out[at:]
    return bytes(out)


# Any JSON value, small: what a field of a JSON file can hold instead of what it should.
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70) | st.floats()
                    | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)


@st.composite
def json_mutated(draw, value):
    """A parsed JSON value with random parts replaced by any JSON value, or left out."""
    if draw(st.integers(0, 7)) == 0:
        return draw(JSON)
    if isinstance(value, dict):
        return {k: draw(json_mutated(v)) for k, v in value.items() if draw(st.integers(0, 9))}
    if isinstance(value, list):
        return [draw(json_mutated(v)) for v in value if draw(st.integers(0, 9))]
    return value


def outcome(call, *args):
    """call(*args) -> its result, or the npbert error it raised; any other exception fails the test."""
    try:
        return call(*args)
    except NpbertError as e:
        message = str(e)
        assert message and "\n" not in message and "\r" not in message and len(message) < 1000, \
            f"not a one-line message: {message[:2000]!r}"
        return e


def peak_bytes(call, *args) -> tuple:
    """(outcome(call, *args), the most memory Python and NumPy held during the call, in bytes)."""
    tracemalloc.start()
    try:
        result = outcome(call, *args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
