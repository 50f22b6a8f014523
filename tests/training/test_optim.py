"""AdamW against a step computed by hand, the schedule's values, clipping, and decay exclusions."""
import math

import numpy as np
import pytest

from npbert.optim import AdamW, clip_by_global_norm, decays, global_norm, linear_warmup_decay
from support.paths import FIXTURES


def test_one_adamw_step_by_hand():
    p = {"w.weight": np.array([1.0, -2.0]), "w.bias": np.array([0.5])}
    g = {"w.weight": np.array([0.1, 0.3]), "w.bias": np.array([-0.2])}
    opt = AdamW(p, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-6)
    opt.step(p, g, lr=0.1)
    # t=1: m = 0.1 g, v = 0.001 g^2, m_hat = g, v_hat = g^2 -> update = g / (|g| + eps) = sign(g) (almost)
    for name, p0, decay in (("w.weight", np.array([1.0, -2.0]), 0.01), ("w.bias", np.array([0.5]), 0.0)):
        gg = g[name]
        expected = p0 * (1 - 0.1 * decay) - 0.1 * gg / (np.abs(gg) + 1e-6)
        np.testing.assert_allclose(p[name], expected, rtol=1e-14)
    np.testing.assert_allclose(opt.m["w.weight"], 0.1 * g["w.weight"])
    np.testing.assert_allclose(opt.v["w.weight"], 0.001 * g["w.weight"] ** 2)


def test_two_steps_by_hand_without_bias_correction():
    p = {"e.weight": np.array([0.3])}
    opt = AdamW(p, weight_decay=0.0, bias_correction=False, eps=1e-6)
    for g in (0.5, -0.25):
        opt.step(p, {"e.weight": np.array([g])}, lr=0.01)
    m1, v1 = 0.05, 0.00025                               # after g=0.5
    m2, v2 = 0.9 * m1 + 0.1 * -0.25, 0.999 * v1 + 0.001 * 0.0625
    x = 0.3 - 0.01 * m1 / (math.sqrt(v1) + 1e-6)
    x -= 0.01 * m2 / (math.sqrt(v2) + 1e-6)
    assert p["e.weight"][0] == pytest.approx(x, rel=1e-14)


def test_weight_decay_excludes_layernorm_and_biases():
    assert decays("bert.encoder.layer.0.attention.self.query.weight")
    assert decays("bert.embeddings.word_embeddings.weight")
    assert not decays("bert.encoder.layer.0.output.LayerNorm.weight")
    assert not decays("bert.embeddings.LayerNorm.bias")
    assert not decays("cls.predictions.bias")
    assert not decays("bert.pooler.dense.bias")
    # zero gradient: only decayed parameters move
    p = {"a.weight": np.ones(3), "a.bias": np.ones(3), "a.LayerNorm.weight": np.ones(3)}
    opt = AdamW(p, weight_decay=0.5)
    opt.step(p, {k: np.zeros(3) for k in p}, lr=0.1)
    assert np.allclose(p["a.weight"], 0.95) and (p["a.bias"] == 1).all() and (p["a.LayerNorm.weight"] == 1).all()


def test_a_parameter_left_out_of_the_optimizer_is_not_updated_not_even_decayed():
    """Frozen = not in the optimizer: no update at all, though its gradient is not zero and weight
    decay is large; the others take exactly the step they take when nothing is frozen."""
    def run(trained):
        p = {"a.weight": np.ones(3), "b.weight": np.ones(3)}
        opt = AdamW({k: p[k] for k in trained}, weight_decay=0.5)
        for _ in range(3):
            opt.step(p, {k: np.full(3, 0.2) for k in p}, lr=0.1)
        return p, opt
    p, opt = run(["a.weight"])
    free, _ = run(["a.weight", "b.weight"])
    assert (p["b.weight"] == 1).all() and "b.weight" not in opt.m and "b.weight" not in opt.v
    assert np.array_equal(p["a.weight"], free["a.weight"]) and not np.allclose(free["b.weight"], 1)


def test_schedule_values():
    lr = [linear_warmup_decay(s, 1e-3, 10, 110) for s in range(111)]
    assert lr[0] == 0.0 and lr[5] == pytest.approx(5e-4) and lr[10] == pytest.approx(1e-3)
    assert lr[60] == pytest.approx(5e-4) and lr[110] == 0.0
    assert all(a <= b for a, b in zip(lr[:10], lr[1:11])) and all(a >= b for a, b in zip(lr[10:], lr[11:]))
    assert linear_warmup_decay(200, 1e-3, 10, 110) == 0.0
    assert linear_warmup_decay(0, 1e-3, 0, 100) == 1e-3


def test_clip_by_global_norm():
    g = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    assert global_norm(g) == 5.0
    assert clip_by_global_norm(g, 1.0) == 5.0
    assert global_norm(g) == pytest.approx(1.0) and g["a"][0] == pytest.approx(0.6)
    small = {"a": np.array([0.3, 0.4])}
    clip_by_global_norm(small, 1.0)
    assert small["a"].tolist() == [0.3, 0.4]


def test_float32_parameters_stay_float32():
    p = {"w.weight": np.ones((2, 2), np.float32)}
    opt = AdamW(p)
    opt.step(p, {"w.weight": np.full((2, 2), 0.1, np.float32)}, lr=1e-3)
    assert p["w.weight"].dtype == np.float32 and opt.m["w.weight"].dtype == np.float32


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adamw_matches_torch_to_a_few_ulp(backend_name, dtype):
    """Five updates against torch.optim.AdamW (tests/reference/make_adamw_fixture.py): within
    3 units in the last place (measured: 3, on ~1% of the elements), since torch rounds p's
    update in another order (addcdiv: p + (-lr/c1) (m / denom); here p - ((lr/c1) m) / denom)."""
    from npbert.backend import use_backend
    f = np.load(FIXTURES / "adamw_torch.npz")
    names = [k.split("/", 2)[2] for k in f.files if k.startswith(f"{dtype}/start/")]
    params = {k: f[f"{dtype}/start/{k}"].copy() for k in names}
    opt = AdamW(params)
    with use_backend(backend_name):
        for step, lr in enumerate(f["lrs"]):
            opt.step(params, {k: f[f"{dtype}/grad{step}/{k}"] for k in names}, float(lr))
    for k in names:
        want = f[f"{dtype}/torch/{k}"]
        assert params[k].dtype == want.dtype
        np.testing.assert_array_max_ulp(params[k], want, maxulp=3)
