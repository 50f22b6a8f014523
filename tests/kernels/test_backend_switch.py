"""The switch between the NumPy reference and the numba kernels: the context manager and
NPBERT_BACKEND pick the implementation, and both backends share one cache layout, so either
backward takes either forward's cache and gives the same gradients."""
import os
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

import npbert
from npbert import backend, kernels, ops
from support.kernel_checks import DTYPES, assert_close, normal


def test_backend_switch_and_context_manager():
    before = npbert.get_backend()
    x, gamma, beta = normal(0, (3, 4), np.float32), np.ones(4, np.float32), np.zeros(4, np.float32)

    def runs(name):   # which implementation a call through the switch reaches
        args = (gamma, beta, 1e-12) if name == "layernorm_forward" else (gamma[None, :], None)
        with mock.patch.object(kernels, name, wraps=getattr(kernels, name)) as kernel:
            getattr(backend, name)(x, *args)
        return "numba" if kernel.called else "numpy"

    with backend.use_backend("numba"):
        assert npbert.get_backend() == "numba"
        assert runs("layernorm_forward") == runs("linear_forward") == "numba"
        with pytest.raises(ValueError, match="unknown backend"):
            npbert.set_backend("cuda")
        assert npbert.get_backend() == "numba"
    assert npbert.get_backend() == before
    with backend.use_backend("numpy"):
        assert runs("layernorm_forward") == "numpy"
    assert set(backend.HOT_OPS) <= set(dir(kernels)), "the numba backend implements every hot op"
    assert set(backend.HOT_OPS) <= set(dir(backend)) and set(backend.HOT_OPS) <= set(dir(ops))


def hot_op_pairs(dtype):
    """(name, forward's arguments, backward's incoming gradient) for every hot forward/backward pair;
    "rng" stands for a fresh Generator of seed 0."""
    x, w, b = normal(0, (2, 5, 6), dtype), normal(1, (7, 6), dtype), normal(2, 7, dtype)
    q, k, v = (normal(i, (2, 3, 5, 4), dtype) for i in (3, 4, 5))
    mask_bias = ops.attention_mask_bias(np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]), dtype)
    ids, table = np.array([[1, 3, 3, 0], [2, 2, 4, 1]]), normal(6, (5, 6), dtype)
    logits, labels = normal(7, (6, 9), dtype), np.array([1, -100, 8, 0, 3, 3])
    return [("linear", (x, w, b), normal(8, (2, 5, 7), dtype)),
            ("linear_gelu", (x, w, b, "gelu_new"), normal(8, (2, 5, 7), dtype)),
            ("embedding", (ids, table, 0), normal(9, (2, 4, 6), dtype)),
            ("layernorm", (x, normal(10, 6, dtype), normal(11, 6, dtype), 1e-12), normal(12, x.shape, dtype)),
            ("gelu", (x, "gelu"), normal(12, x.shape, dtype)),
            ("dropout", (x, 0.3, "rng"), normal(12, x.shape, dtype)),
            ("attention_core", (q, k, v, mask_bias, 0.2, "rng"), normal(13, q.shape, dtype)),
            ("cross_entropy", (logits, labels), 0.7)]


def same_layout(a, b):
    """Two cache records of one type whose fields agree in shape and dtype (records inside too),
    but for the one documented difference: the LayerNorm kernel keeps rstd in float64."""
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        if isinstance(a, ops.LayerNormCache):
            a, b = a._replace(rstd=a.rstd.astype(np.float64)), b
        return type(a) is type(b) and all(same_layout(u, v) for u, v in zip(a, b, strict=True))
    if isinstance(a, (str, int, float, type(None), tuple)) or isinstance(a, np.dtype):
        return type(a) is type(b) or {type(a), type(b)} <= {int, float}
    return np.shape(a) == np.shape(b) and np.result_type(a) == np.result_type(b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_backends_share_one_cache_layout(dtype):
    """The kernels return the reference's cache records, field for field, shape for shape, dtype
    for dtype, so either backward takes either forward's cache and gives the same gradients."""
    for name, args, dy in hot_op_pairs(dtype):
        made = {}
        for made_by in ("numpy", "numba"):
            with backend.use_backend(made_by):
                call = [np.random.default_rng(0) if isinstance(a, str) and a == "rng" else a for a in args]
                made[made_by] = getattr(backend, f"{name}_forward")(*call)[1]
        assert same_layout(made["numpy"], made["numba"]), (name, made["numpy"], made["numba"])
        want = getattr(ops, f"{name}_backward")(dy, made["numpy"])
        want = want if isinstance(want, tuple) else (want,)
        for used_by in ("numpy", "numba"):
            for made_by, cache in made.items():
                with backend.use_backend(used_by):
                    got = getattr(backend, f"{name}_backward")(dy, cache)
                got = got if isinstance(got, tuple) else (got,)
                for g, w_ in zip(got, want, strict=True):
                    assert (g is None) == (w_ is None), (name, made_by, used_by)
                    if g is not None:
                        assert g.dtype == dtype, (name, made_by, used_by)
                        assert_close(g, w_, dtype, f"{name}: {made_by} cache, {used_by} backward", floor=1.0)


@pytest.mark.parametrize("value, expect", [("numba", "numba"), ("", "numpy"), ("bogus", "error")])
def test_backend_from_environment(value, expect):
    code = "import npbert; print(npbert.get_backend())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "NPBERT_BACKEND": value})
    if expect == "error":
        assert r.returncode != 0 and "NPBERT_BACKEND='bogus'" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.strip() == expect, r.stderr
