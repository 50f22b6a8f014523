"""The LayerNorm exercise: normalise each row over its H features, then scale and shift
(docs/layers/layernorm.md). Its probes hold the two things the golden rows, of variance about 1,
cannot show: eps inside the square root, and a constant row."""
import numpy as np

from npbert.exercises.diagnose import Mistake, compare
from npbert.exercises.grade import Exercise, attempt, gradients
from npbert.ops import layernorm_backward, layernorm_forward


def _run(f, t, c):
    return f[0](t["x"], t["gamma"], t["beta"], c["eps"])


def _backward(f, dy, cache):
    return gradients(("x", "gamma", "beta"), f[1](dy, cache))


def _normalised(x, axis=-1, ddof=0, eps=1e-12, inside=True):
    """xhat and rstd over `axis` (the ways a slip may compute them)."""
    xc = x - x.mean(axis=axis, keepdims=True)
    var = xc.var(axis=axis, keepdims=True, ddof=ddof)
    rstd = 1.0 / np.sqrt(var + eps) if inside else 1.0 / (np.sqrt(var) + eps)
    return xc * rstd, rstd


def _dx(t, mean_term=True, projection=True, with_rstd=True, with_gamma=True, mean=np.mean):
    """dx with one of its terms dropped or changed."""
    xhat, rstd = _normalised(t["x"])
    dxhat = t["grad/out"] * (t["gamma"] if with_gamma else 1.0)
    dx = dxhat - (mean(dxhat, axis=-1, keepdims=True) if mean_term else 0.0) \
        - (xhat * mean(dxhat * xhat, axis=-1, keepdims=True) if projection else 0.0)
    return rstd * dx if with_rstd else dx


def _forward_with(t, **how):
    return _normalised(t["x"], **how)[0] * t["gamma"] + t["beta"]


MISTAKES = (
    Mistake("out", lambda t: _forward_with(t, ddof=1), "the variance divides by H - 1 (np.var(..., ddof=1), or "
            "torch's unbiased var); LayerNorm's divides by H"),
    Mistake("out", lambda t: _forward_with(t, eps=1e-5), "eps is 1e-5 (PyTorch's default), not the eps passed in "
            "(BERT's 1e-12)"),
    Mistake("out", lambda t: _normalised(t["x"], axis=1)[0] * t["gamma"] + t["beta"],
            "it normalises over axis 1 (T, the tokens); LayerNorm normalises each token over its H features, axis -1"),
    Mistake("out", lambda t: _normalised(t["x"], axis=0)[0] * t["gamma"] + t["beta"],
            "it normalises over axis 0 (B, the batch): that is BatchNorm; LayerNorm uses each token's own H features"),
    Mistake("out", lambda t: _normalised(t["x"])[0], "gamma and beta are not applied: y = xhat * gamma + beta"),
    Mistake("x", lambda t: _dx(t, mean_term=False), "the term -mean(dxhat) is missing (the mean's dependence on x)"),
    Mistake("x", lambda t: _dx(t, projection=False), "the term -xhat * mean(dxhat * xhat) is missing (the "
            "variance's dependence on x)"),
    Mistake("x", lambda t: _dx(t, with_rstd=False), "the factor rstd = 1 / sqrt(var + eps) in front is missing"),
    Mistake("x", lambda t: _dx(t, with_gamma=False), "dxhat = dy, without gamma: dxhat = dy * gamma"),
    Mistake("x", lambda t: _dx(t, mean=np.sum), "the means over H are sums: the 1/H of d mean / d x_j = 1/H "
            "(and of the variance) is missing"),
    Mistake("gamma", lambda t: t["grad/out"].reshape(-1, t["x"].shape[-1]).sum(0),
            "dgamma is computed as sum(dy), dbeta's formula: dgamma = sum(dy * xhat)"),
    Mistake("gamma", lambda t: (t["grad/out"] * t["x"]).reshape(-1, t["x"].shape[-1]).sum(0),
            "dgamma is computed as sum(dy * x): it is dy times the normalised xhat, "
            "sum(dy * xhat)"),
    Mistake("beta", lambda t: (t["grad/out"] * _normalised(t["x"])[0]).reshape(-1, t["x"].shape[-1]).sum(0),
            "dbeta is computed as sum(dy * xhat), dgamma's formula: dbeta = sum(dy)"),
)


def quiet_rows(f):
    """Rows of tiny variance (1e-12): eps inside the square root, and a constant row gives beta"""
    rng = np.random.default_rng(0)
    x = np.stack([1.0 + 1e-6 * rng.standard_normal(10), np.full(10, 3.0)])          # (2, H)
    gamma, beta = 1.0 + 0.1 * rng.standard_normal(10), 0.1 * rng.standard_normal(10)
    y, _, finding = attempt(lambda: f[0](x, gamma, beta, 1e-12), "layernorm_forward")
    want, _ = layernorm_forward(x, gamma, beta, 1e-12)
    finding = finding or compare("out", y, want, 1e-10, ("row", "H"), (
        Mistake("out", lambda t: _normalised(x, eps=1e-12, inside=False)[0] * gamma + beta,
                "eps is added outside the square root, sqrt(var) + eps: it belongs inside, sqrt(var + eps), which "
                "is what decides a row of tiny variance (and a constant row's division by zero)"),), {})
    return finding._replace(what=finding.what + " for a row of variance 1e-12 and a constant row") if finding else None


LAYERNORM = Exercise(
    "layernorm", "docs/layers/layernorm.md", "layernorm", ("layernorm_forward", "layernorm_backward"),
    (layernorm_forward, layernorm_backward), _run, _backward, ("x", "gamma", "beta"),
    axes={"out": ("B", "T", "H"), "x": ("B", "T", "H"), "gamma": ("H",), "beta": ("H",)},
    mistakes=MISTAKES, probes=(quiet_rows,))
