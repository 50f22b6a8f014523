"""Where Numba caches the compiled kernels: a directory named by a hash of all kernel sources.

Numba's on-disk cache (cache=True) checks only the source file that defines a function, so a
kernel whose callee changed in another file (gelu.py calling fastexp.py's fast_erf, say; or a
parallel driver, whose source is threads.py's template, calling an edited kernel) would be
loaded stale from the cache, compiled against the old callee. Keying the whole cache by a
digest of every file in npbert/kernels makes any edit start a fresh directory: under
NUMBA_CACHE_DIR when the user set it (its numba-<digest> subdirectory), else beside the
kernels. Must run before the first @njit(cache=True) decorator is evaluated:
npbert/kernels/__init__.py calls it first.
"""
import hashlib
import os
from pathlib import Path

import numba

KERNELS_DIR = Path(__file__).resolve().parent


def kernel_sources_digest(directory: Path = KERNELS_DIR) -> str:
    """sha256 over the names and bytes of directory's *.py files, in name order (16 hex digits)."""
    h = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def use_source_keyed_cache(directory: Path = KERNELS_DIR) -> str:
    """Point Numba's cache at NUMBA_CACHE_DIR/numba-<digest of directory's sources> when the user
    set NUMBA_CACHE_DIR, else at directory/__pycache__/numba-<digest>, or at
    ~/.cache/npbert/numba-<digest> where the package is read-only (a system-wide install);
    returns the directory in force."""
    global _unwritable
    name = f"numba-{kernel_sources_digest(directory)}"
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "npbert"
    tried = [Path(chosen)] if chosen else [Path(directory) / "__pycache__", user_cache]
    for parent in tried:
        if _writable(parent / name):
            numba.config.CACHE_DIR = str(parent / name)
            _unwritable = []
            break
    else:
        _unwritable = tried
    return numba.config.CACHE_DIR


def cache_is_cold(cache_dir=None) -> bool:
    """No kernel compiled into the cache yet: no Numba index file (*.nbi) of a kernels/ source under
    cache_dir (default: the directory in force), so the first kernel calls compile them
    (docs/performance.md, "Compile time"). Numba files a source's index under a subdirectory
    named after the source's directory, kernels_<hash> here; ops/erf.py's vectorised erf compiles
    at import and writes its index (in ops_<hash>) before anyone asks, so it does not count.
    Unknown (Numba's own per-source __pycache__ when no directory was set): False, nothing to say."""
    cache_dir = cache_dir or numba.config.CACHE_DIR
    prefix = KERNELS_DIR.name + "_"
    return bool(cache_dir) and not any(p.parent.name.startswith(prefix) for p in Path(cache_dir).rglob("*.nbi"))


COMPILE_MESSAGE = "compiling the Numba kernels (first run only, ~10-20 s; cached afterwards) ..."
_unwritable = []                 # the cache directories use_source_keyed_cache tried, when none could be written


def compile_message() -> str:
    """What the first kernel call of a cold cache says: COMPILE_MESSAGE, unless nothing can be
    cached (an unwritable NUMBA_CACHE_DIR), when every run compiles and "first run only" is false."""
    if not _unwritable:
        return COMPILE_MESSAGE
    where = " nor ".join(map(str, _unwritable))
    return (f"compiling the Numba kernels (~10-20 s, on every run: {where} cannot be written, so nothing is "
            "cached; set NUMBA_CACHE_DIR to a writable directory) ...")


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        return os.access(path, os.W_OK)
    except OSError:
        return False
