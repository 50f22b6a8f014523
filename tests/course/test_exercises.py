"""The exercises' checker (npbert/exercises) catches the classic mistakes and passes npbert's own
functions. Each broken solution below is written the way a student writes the slip (np.var(ddof=1),
`x @ w`, the mask added after the softmax, `m = b1 * m + ...`), not by the checker's own catalogue,
and the report must name the function, the tensor and the cause. The exercise files in
demos/exercises/ have the solutions' signatures and run (their notebooks: tests/course/test_notebooks.py)."""
import ast
import inspect
import math
import subprocess
import sys

import numpy as np
import pytest

from npbert import ops
from npbert.exercises import EXERCISES, check, report
from npbert.layers.attention import self_attention_backward
from npbert.layers.feedforward import feedforward_backward
from npbert.ops.erf import erf
from support.paths import ROOT

EXERCISE_FILES = sorted((ROOT / "demos" / "exercises").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("name", list(EXERCISES))
def test_npberts_own_functions_pass(name):
    r = report(name, *EXERCISES[name].solution)
    assert r.passed and str(r).startswith(f"{name}: all checks passed."), str(r)


# --- the slips, as a student writes them ------------------------------------------------------------

def linear_forward(x, w, b):
    return x @ w.T + b, (x, w)


def layernorm_forward(x, gamma, beta, eps, ddof=0, eps_outside=False):
    xc = x - x.mean(-1, keepdims=True)
    std = np.sqrt(xc.var(-1, keepdims=True, ddof=ddof) + (0 if eps_outside else eps)) + (eps if eps_outside else 0)
    xhat = xc / std
    return xhat * gamma + beta, (xhat, 1 / std, gamma)


def layernorm_backward(dy, cache, mean=np.mean, keep_mean_term=True):
    xhat, rstd, gamma = cache
    dxhat = dy * gamma
    dx = rstd * (dxhat - (mean(dxhat, -1, keepdims=True) if keep_mean_term else 0)
                 - xhat * mean(dxhat * xhat, -1, keepdims=True))
    return dx, (dy * xhat).sum((0, 1)), dy.sum((0, 1))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention_forward(q, k, v, mask_bias, p_drop, rng, where="scores"):
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if where == "scores":
        scores = scores + mask_bias[:, None, None, :]
    probs = softmax(scores)
    if where == "after":
        probs = probs * (mask_bias == 0)[:, None, None, :]
    return probs @ v, (q, k, v, probs)


def attention_backward(dcontext, cache, transpose_dk=True):
    q, k, v, probs = cache
    dprobs = dcontext @ v.swapaxes(-1, -2)
    dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) / math.sqrt(q.shape[-1])
    return dscores @ k, (dscores.swapaxes(-1, -2) if transpose_dk else dscores) @ q, probs.swapaxes(-1, -2) @ dcontext


def encoder_layer_backward(dy, c, residual_at_h=True, dropout=True):
    g = {}
    drop = ops.dropout_backward if dropout else (lambda d, cache: d)
    dsum2, g["output.LayerNorm.weight"], g["output.LayerNorm.bias"] = ops.layernorm_backward(dy, c.output_norm)
    dh, g_ffn = feedforward_backward(drop(dsum2, c.output_dropout), c.feedforward)
    dsum1, g["attention.output.LayerNorm.weight"], g["attention.output.LayerNorm.bias"] = ops.layernorm_backward(
        dsum2 + dh if residual_at_h else dh, c.attention_norm)
    dx, g_attn = self_attention_backward(drop(dsum1, c.attention_dropout), c.attention)
    return dsum1 + dx, {**g, **g_ffn, **g_attn}


def adamw_rebinding_m(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    m = b1 * m + (1 - b1) * g                          # a new array: the caller's m never changes
    v *= b2
    v += (1 - b2) * g * g
    p *= 1 - lr * weight_decay
    p -= lr * (m / c1) / (np.sqrt(v / c2) + eps)


def adamw_l2(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    g = g + weight_decay * p                           # Adam with L2, not decoupled decay
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    p -= lr * (m / c1) / (np.sqrt(v / c2) + eps)


def adamw_eps_inside(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * g * g
    p *= 1 - lr * weight_decay
    p -= lr * (m / c1) / np.sqrt(v / c2 + eps)


def cross_entropy_forward(logits, labels, over="counted"):
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    counted = labels != -100
    n = counted.sum() if over == "counted" else len(labels)
    return -logp[counted, labels[counted]].sum() / n, (logp, labels, counted)


def cross_entropy_backward(dloss, cache, zero_ignored=True):
    logp, labels, counted = cache
    g = np.exp(logp)
    g[np.flatnonzero(counted), labels[counted]] -= 1
    return dloss * g * (counted[:, None] if zero_ignored else 1) / counted.sum()


def gelu_forward(x, hidden_act="gelu", form="exact"):
    y = 0.5 * x * (1 + (erf(x / math.sqrt(2)) if form == "exact" else
                        np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))
    return y, x


SLIPS = [                                              # (exercise, functions, the report's words)
    ("linear", (lambda x, w, b: (x @ w + b, None), None),
     ["linear_forward: it did not run", "matmul", "a transpose", "(out, in)"]),
    ("linear", (linear_forward, lambda dy, c: (dy @ c[1], c[0].reshape(-1, 10).T @ dy.reshape(-1, 13),
                                               dy.sum((0, 1)))),
     ["linear_backward: dw, the gradient of w", "the transpose of (13, 10)", "dW = dy^T x"]),
    ("linear", (linear_forward, lambda dy, c: (dy @ c[1], dy.reshape(-1, 13).T @ c[0].reshape(-1, 10), dy.sum(0))),
     ["db, the gradient of b", "not summed over the leading axes (7,)"]),
    ("linear", (lambda x, w, b: (x @ w.T, None), None), ["the output", "the bias b is not added"]),
    ("layernorm", (lambda *a: layernorm_forward(*a, ddof=1), None), ["the output", "divides by H - 1"]),
    ("layernorm", (lambda *a: layernorm_forward(*a, eps_outside=True), None),
     ["a row of variance 1e-12", "eps is added outside the square root"]),
    ("layernorm", (layernorm_forward, lambda dy, c: layernorm_backward(dy, c, keep_mean_term=False)),
     ["layernorm_backward: dx, the gradient of x", "-mean(dxhat) is missing", "finite differences"]),
    ("layernorm", (layernorm_forward, lambda dy, c: layernorm_backward(dy, c, mean=np.sum)),
     ["dx, the gradient of x", "the 1/H", "is missing"]),
    ("layernorm", (layernorm_forward, lambda dy, c: (layernorm_backward(dy, c)[0], dy * c[0], dy.sum((0, 1)))),
     ["dgamma", "not summed over the leading axes (3, 7)"]),
    ("layernorm", (lambda x, g, b, eps: ((x - x.mean(-1)) * g + b, None), None),
     ["it did not run", "could not be broadcast", "keepdims=True"]),
    ("gelu", (lambda x, act="gelu": gelu_forward(x, act, "tanh"), None), ["the output", "tanh approximation"]),
    ("gelu", (gelu_forward, lambda dy, x: dy * 0.5 * (1 + erf(x / math.sqrt(2)))),
     ["dx, the gradient of x", "Phi(x) alone", "x phi(x)"]),
    ("softmax", (lambda x: (np.exp(x) / np.exp(x).sum(-1, keepdims=True), None), None),
     ["scores of 1000", "NaN or infinite", "subtract each row's maximum"]),
    ("softmax", (lambda x: (softmax(x), softmax(x)), lambda dy, y: y * (1 - y) * dy),
     ["dx, the gradient of x", "only the Jacobian's diagonal"]),
    ("cross_entropy", (lambda lg, lb: cross_entropy_forward(lg, lb, over="all"), None),
     ["the output", "divides by every row (21)", "counted rows (14)"]),
    ("cross_entropy", (lambda lg, lb: (-(lg - np.log(np.exp(lg).sum(-1, keepdims=True)))[np.arange(21), lb].mean(),
                                       None), None), ["IndexError", "-100", "ignore_index"]),
    ("cross_entropy", (cross_entropy_forward, lambda d, c: cross_entropy_backward(d, c, zero_ignored=False)),
     ["dlogits", "the rows labelled -100 get a gradient"]),
    ("attention", (lambda *a: attention_forward(*a, where="after"), None),
     ["the output", "the mask is applied after the softmax"]),
    ("attention", (lambda *a: attention_forward(*a, where="nowhere"), None), ["the output", "the mask is not applied"]),
    ("attention", (attention_forward, lambda d, c: attention_backward(d, c, transpose_dk=False)),
     ["dk, the gradient of k", "dscores^T q"]),
    ("encoder_layer", (lambda dy, c: encoder_layer_backward(dy, c, residual_at_h=False),),
     ["dattention.output.LayerNorm.weight", "the residual around the feed-forward is missing"]),
    ("encoder_layer", (lambda dy, c: encoder_layer_backward(dy, c, dropout=False),),
     ["wrong with dropout on", "multiplied by the same mask"]),
    ("adamw", (adamw_rebinding_m,), ["m, the first moment is not updated", "in place"]),
    ("adamw", (adamw_l2,), ["m, the first moment", "step 1 of 5", "weight decay is added to the gradient"]),
    ("adamw", (adamw_eps_inside,), ["p, the parameter", "eps is added inside the square root"]),
]


@pytest.mark.parametrize("name, functions, words", SLIPS, ids=[f"{s[0]}-{i}" for i, s in enumerate(SLIPS)])
def test_a_classic_mistake_is_named(name, functions, words):
    functions = tuple(f if f is not None else EXERCISES[name].solution[i] for i, f in enumerate(functions))
    r = report(name, *functions)
    text = " ".join(str(r).split())                    # the wrapped lines joined
    assert not r.passed and text.startswith(f"{name}: not yet. In your "), text
    for word in words:
        assert word in text, (word, text)
    assert f"show_solution('{name}')" in text


def test_an_unwritten_function_is_said_to_be_unwritten():
    def stub(*args):
        raise NotImplementedError("your code here")
    text = str(report("layernorm", stub, stub))
    assert "In your layernorm_forward: it is not written yet." in text


def test_the_exercise_files_have_the_solutions_signatures():
    """Each stub in demos/exercises/ has the signature of npbert's function it is checked against
    (which may add optional parameters), its body only `raise NotImplementedError`, and the file
    checks that exercise: every exercise has its file."""
    checked = set()
    for path in EXERCISE_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stubs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "check"]
        assert calls, path.name
        for call in calls:
            exercise = EXERCISES[call.args[0].value]
            assert [a.id for a in call.args[1:]] == list(exercise.functions), path.name
            for name, solution in zip(exercise.functions, exercise.solution):
                stub, wanted = [a.arg for a in stubs[name].args.args], inspect.signature(solution).parameters
                assert stub == list(wanted)[:len(stub)], name            # npbert's may add optional ones (trace)
                assert all(p.default is not p.empty for p in list(wanted.values())[len(stub):]), name
                assert isinstance(stubs[name].body[-1], ast.Raise) and len(stubs[name].body) == 1, name
            checked.add(exercise.name)
    assert checked == set(EXERCISES)


def test_an_exercise_runs_as_a_script_and_says_not_yet():
    r = subprocess.run([sys.executable, str(EXERCISE_FILES[0])], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "not yet" in r.stdout and "not written yet" in r.stdout, r.stdout + r.stderr


def test_the_report_demos_readme_shows_is_what_check_prints():
    """demos/README.md shows the report for a LayerNorm backward without its -mean(dxhat) term: it is
    the one `check` prints for that slip."""
    text = (ROOT / "demos" / "README.md").read_text(encoding="utf-8")
    shown = text.split("A LayerNorm backward without the `-mean(dxhat)` term:\n\n```\n", 1)[1].split("\n```", 1)[0]
    got = report("layernorm", layernorm_forward, lambda dy, c: layernorm_backward(dy, c, keep_mean_term=False))
    assert shown == str(got)


@pytest.mark.parametrize("name", ["gelu", "softmax", "cross_entropy"])
def test_a_backward_returning_an_extra_none_is_told_what_to_return(name):
    # before: np.shape of the ragged (dx, None) raised ValueError inside the checker
    forward, backward = EXERCISES[name].solution
    text = " ".join(str(report(name, forward, lambda *args: (backward(*args), None))).split())
    assert text.startswith(f"{name}: not yet. In your {name}_backward: "), text
    assert "a tuple of 2" in text and "one gradient per input" in text, text


@pytest.mark.parametrize("args, words", [
    (("layrnorm", ops.layernorm_forward, ops.layernorm_backward), ["no exercise named 'layrnorm'", "layernorm"]),
    (("layernorm", ops.layernorm_forward), ["takes 2 functions", "layernorm_forward, layernorm_backward", "given 1"]),
])
def test_a_wrong_name_or_number_of_functions_is_said_to_the_student(args, words, capsys):
    # before: a KeyError or TypeError raised from inside npbert/exercises
    check(*args)
    text = capsys.readouterr().out
    assert text.startswith("check(") and "Error" not in text, text
    for word in words:
        assert word in text, (word, text)
    assert not report(*args).passed


def test_check_says_ctrl_c_stops_a_function_that_never_returns():
    assert "Ctrl-C" in check.__doc__


# --- diagnoses that named the wrong cause, or none ---------------------------------------------------

def layernorm_forward_in_place(x, gamma, beta, eps):
    x -= x.mean(-1, keepdims=True)                     # the caller's x is now centred
    rstd = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * rstd * gamma + beta, (x * rstd, rstd, gamma)


def layernorm_backward_zeroing_dy(dy, cache):
    grads = layernorm_backward(dy, cache)
    dy[...] = 0                                        # "done with it"
    return grads


def text_of(name, *functions):
    r = report(name, *functions)
    assert not r.passed
    return " ".join(str(r).split())


def test_an_input_changed_in_place_is_named():
    # before: both were "dx is wrong with dropout on" (LayerNorm has no dropout): the output and the
    # gradients are right once, and the finite differences then saw another x, or a zeroed dy
    text = text_of("layernorm", layernorm_forward_in_place, layernorm_backward)
    assert "In your layernorm_forward: it changes its input x in place" in text and "x -= mean" in text, text
    text = text_of("layernorm", layernorm_forward, layernorm_backward_zeroing_dy)
    assert "In your layernorm_backward: it changes dout, the gradient it was given, in place" in text, text
    assert "dropout" not in text


@pytest.mark.parametrize("returned, words", [
    (lambda g: tuple(a.astype(np.float64) for a in g), "the gradient dx for float32 inputs is not float32"),
    (lambda g: (g[0].tolist(), *g[1:]), "the gradient dx for float32 inputs is a list, not a NumPy array"),
])
def test_a_gradient_of_the_wrong_dtype_or_type_blames_the_backward(returned, words):
    # before: "In your layernorm_forward: the gradient dx for float32 inputs is not float32"
    text = text_of("layernorm", ops.layernorm_forward, lambda dy, c: returned(ops.layernorm_backward(dy, c)))
    assert f"In your layernorm_backward: {words}" in text, text


@pytest.mark.parametrize("name, extra", [("layernorm", 1), ("linear", 1), ("attention", -1)])
def test_a_backward_returning_another_number_of_values_is_told(name, extra):
    # before: zip() dropped an extra value and the report said "all checks passed"
    forward, backward = EXERCISES[name].solution
    cut = (lambda *a: (*backward(*a), None)) if extra > 0 else (lambda *a: backward(*a)[:-1])
    text = text_of(name, forward, cut)
    assert f"In your {EXERCISES[name].functions[1]}: it returns {3 + extra} values, not 3" in text, text
    assert ("extra value" if extra > 0 else "missing") in text


def test_state_kept_between_calls_is_not_blamed_on_dropout():
    kept = {}

    def gelu_forward(x, hidden_act):                   # the first call's output, whatever comes after
        kept.setdefault("y", ops.gelu_forward(x.copy(), hidden_act))
        return kept["y"]
    text = text_of("gelu", gelu_forward, ops.gelu_backward)
    assert "dx is wrong when your functions are called again" in text and "dropout" not in text, text
