"""The Numba cache is keyed by all kernel sources: editing a callee in one file must recompile
its caller in another (Numba alone would load the caller stale from its on-disk cache)."""
import os
import subprocess
import sys
import textwrap

import numba
import pytest

import npbert
import npbert.kernels  # noqa: F401  (sets the cache directory)
from npbert.kernels.jit_cache import KERNELS_DIR, kernel_sources_digest
from support.patience import HANG_SECONDS

PACKAGE = {
    "__init__.py": """
        from pathlib import Path
        from npbert.kernels.jit_cache import use_source_keyed_cache
        use_source_keyed_cache(Path(__file__).parent)
        from toykernels.caller import f
        """,
    "callee.py": """
        from numba import njit
        @njit(cache=True)
        def g(x):
            return x + 1
        """,
    "caller.py": """
        from numba import njit
        from toykernels.callee import g
        @njit(cache=True)
        def f(x):
            return g(x) * 2
        """,
}


def write_package(root):
    (root / "toykernels").mkdir()
    for name, text in PACKAGE.items():
        (root / "toykernels" / name).write_text(textwrap.dedent(text))


def run_f(root) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    repo = os.path.dirname(os.path.dirname(npbert.__file__))         # the directory holding npbert/
    env["PYTHONPATH"] = os.pathsep.join([str(root), repo])
    r = subprocess.run([sys.executable, "-c", "from toykernels import f; print(f(1))"], cwd=root,
                       env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.slow
def test_editing_a_callee_recompiles_its_caller(tmp_path):
    write_package(tmp_path)
    assert run_f(tmp_path) == "4"                     # compiled and cached: (1 + 1) * 2
    callee = tmp_path / "toykernels" / "callee.py"
    callee.write_text(callee.read_text().replace("x + 1", "x + 2"))
    assert run_f(tmp_path) == "6"                     # caller.py unchanged, yet (1 + 2) * 2
    assert len(list((tmp_path / "toykernels" / "__pycache__").glob("numba-*"))) == 2


def test_digest_follows_every_source_file(tmp_path):
    write_package(tmp_path)
    before = kernel_sources_digest(tmp_path / "toykernels")
    assert kernel_sources_digest(tmp_path / "toykernels") == before
    with open(tmp_path / "toykernels" / "callee.py", "a") as f:
        f.write("# a comment counts too\n")
    assert kernel_sources_digest(tmp_path / "toykernels") != before


def test_npbert_kernels_cache_under_their_digest():
    parent = os.environ.get("NUMBA_CACHE_DIR") or str(KERNELS_DIR / "__pycache__")
    assert numba.config.CACHE_DIR == os.path.join(parent, f"numba-{kernel_sources_digest()}")


def test_a_read_only_package_caches_in_the_users_cache_directory(tmp_path, monkeypatch):
    # a system-wide install: the package's __pycache__ cannot be written (faked: tests run as root)
    from npbert.kernels import jit_cache
    write_package(tmp_path)
    package = tmp_path / "toykernels"
    writable = jit_cache._writable
    monkeypatch.setattr(jit_cache, "_writable", lambda path: package not in path.parents and writable(path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    chosen = jit_cache.use_source_keyed_cache(package)
    assert chosen == str(tmp_path / "home-cache" / "npbert" / f"numba-{kernel_sources_digest(package)}")
    assert numba.config.CACHE_DIR == chosen


@pytest.mark.slow
def test_a_users_numba_cache_dir_holds_the_digests_directory(tmp_path):
    """Keyed there too: a parallel driver's source is threads.py, so with NUMBA_CACHE_DIR used as it
    is an edited kernel ran under its old driver (measured: garbage from the decoder's loop)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    code = "import numba, npbert.kernels; print(numba.config.CACHE_DIR)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / f"numba-{kernel_sources_digest()}")


def test_an_empty_or_missing_cache_is_cold_and_one_with_an_index_file_is_not(tmp_path):
    from npbert.kernels.jit_cache import cache_is_cold
    assert cache_is_cold(tmp_path / "missing") and cache_is_cold(tmp_path)
    (tmp_path / "ops_def").mkdir()
    (tmp_path / "ops_def" / "erf.erf-11.py311.nbi").write_bytes(b"")     # compiled at import: not a kernel
    assert cache_is_cold(tmp_path)
    (tmp_path / "kernels_abc").mkdir()
    (tmp_path / "kernels_abc" / "gelu._forward-10.py311.nbi").write_bytes(b"")
    assert not cache_is_cold(tmp_path)


def cold_start(cache_dir) -> str:
    """stderr of a fresh process that imports npbert, picks the numba backend and runs one kernel,
    with NUMBA_CACHE_DIR=cache_dir."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), NPBERT_BACKEND="numba")
    code = "import numpy as np; from npbert import backend; backend.sum_of_squares(np.ones(3, np.float32))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    return r.stderr


@pytest.mark.slow
def test_a_truly_empty_cache_says_the_kernels_compile_and_then_says_nothing(tmp_path):
    from npbert.kernels.jit_cache import COMPILE_MESSAGE
    assert COMPILE_MESSAGE in cold_start(tmp_path)              # no stub: the import compiles erf first
    assert COMPILE_MESSAGE not in cold_start(tmp_path)          # a kernel is in the cache now


def test_the_first_kernel_call_on_a_cold_cache_says_the_kernels_compile_once(monkeypatch, capsys):
    import numpy as np

    from npbert import backend
    from npbert.kernels import jit_cache
    monkeypatch.setattr(backend, "_compile_announced", False)
    monkeypatch.setattr(jit_cache, "cache_is_cold", lambda: True)
    with backend.use_backend("numba"):
        backend.sum_of_squares(np.ones(3, np.float32))
        backend.sum_of_squares(np.ones(3, np.float32))
    captured = capsys.readouterr()
    assert captured.err.count(jit_cache.COMPILE_MESSAGE) == 1 and captured.out == ""


def test_a_warm_cache_says_nothing(monkeypatch, capsys):
    import numpy as np

    from npbert import backend
    from npbert.kernels import jit_cache
    monkeypatch.setattr(backend, "_compile_announced", False)
    monkeypatch.setattr(jit_cache, "cache_is_cold", lambda: False)
    with backend.use_backend("numba"):
        backend.sum_of_squares(np.ones(3, np.float32))
    assert capsys.readouterr().err == ""


def test_an_unwritable_cache_directory_says_every_run_compiles(tmp_path):
    """Before: "first run only ... cached afterwards", while nothing could be cached and every run
    compiled again."""
    from support.hostile import run_unwritable
    place = tmp_path / "cache"
    place.mkdir()
    code = "import numpy as np; from npbert import backend; backend.sum_of_squares(np.ones(3, np.float32))"
    argv = ["env", f"NUMBA_CACHE_DIR={place}", "NPBERT_BACKEND=numba", sys.executable, "-c", code]
    r, _ = run_unwritable(place, argv)
    assert r.returncode == 0, r.stderr
    assert f"on every run: {place} cannot be written, so nothing is cached" in r.stderr and "first run" not in r.stderr
