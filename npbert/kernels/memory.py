"""Output arrays placed so that they do not 4K-alias the inputs a kernel streams through.

malloc returns large blocks 16 bytes past a page boundary, so two arrays of the same size
often sit a whole number of 4 KB pages apart (x at ...c770, y at ...c780 + 8 MB). A loop
that reads x[i] and writes y[i] then has every store share its low 12 address bits with a
nearby load, and the CPU's memory disambiguation stalls on each one ("4K aliasing"):
measured here, a GELU over a (32, 128, 512) float32 array took 135 ms instead of 25 ms in
the training step whenever its output landed that way. The fix is a few bytes: allocate 4 KB
more and start the output at the offset within the page that is farthest from every input.
"""
import numpy as np

PAGE = 4096
STEP = 64                                              # candidate offsets: cache-line aligned
CANDIDATES = np.arange(0, PAGE, STEP)                  # (64,) offsets tried


def _best_offset(base: int, inputs) -> int:
    """Offset in [0, PAGE) of a start address (from base) maximising the smallest in-page
    distance to the inputs' start addresses; the first such offset on ties. Vectorised: as a
    Python loop over the 64 candidates it cost ~0.1 ms a call, 0.8 ms a tiny inference step."""
    addrs = np.array([a.ctypes.data % PAGE for a in inputs if isinstance(a, np.ndarray) and a.size])
    if not addrs.size:
        return 0
    gap = ((base + CANDIDATES)[:, None] - addrs[None, :]) % PAGE   # (64, inputs)
    distance = np.minimum(gap, PAGE - gap).min(axis=1)              # (64,) circular, to the nearest input
    return int(CANDIDATES[np.argmax(distance)])


def place(buf: np.ndarray, nbytes: int, inputs) -> np.ndarray:
    """A uint8 view of nbytes inside buf (which has PAGE spare bytes), placed apart from inputs."""
    off = _best_offset(buf.ctypes.data, inputs)
    return buf[off:off + nbytes]


def empty_apart(shape, dtype, *inputs) -> np.ndarray:
    """np.empty(shape, dtype), placed not to 4K-alias any of the input arrays."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return place(np.empty(nbytes + PAGE, np.uint8), nbytes, inputs).view(dtype).reshape(shape)
