"""The packed step (BertModel on the packed layout, npbert/layers/layout.py) against the padded
reference (the same model on the padded layout: npbert/model.py, npbert/heads/task_model.py): on
random batches with any right padding and gaps, with dropout on (the same keys: the same masks),
the same losses and every parameter's gradient, float64 within 1e-12 of the gradients' scale,
float32 within 2e-6 of it against the float64 reference (the packed step's decoder and loss
fused, the padded one's the reference: whole logits, then cross-entropy). The finite-difference checks of the
layers and the model on the packed layout are gradcheck cases (the [packed, ...] rows:
tests/model/test_gradcheck.py runs them)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npbert
from npbert.config import BertConfig
from npbert.errors import InputError
from npbert.heads.params import init_head
from npbert.heads.registry import HEADS
from npbert.heads.task_model import task_model_backward, task_model_forward
from npbert.layers.layout import Packed, Padded
from npbert.model import bert_backward, bert_forward, pretraining_backward, pretraining_forward
from npbert.model_params import init_params
from npbert.ops import IGNORE_INDEX
from npbert.trace import Trace

CONFIG = BertConfig(vocab_size=23, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=12,
                    max_position_embeddings=16, hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
SETTINGS = settings(max_examples=12, deadline=None)


def batch(seed, B, T, gaps):
    """Random pairs: lengths in [1, T] (some equal, some full), padding after them; gaps: also
    padded holes after position 0 ([CLS] stays real: the pooler reads it)."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([T, rng.integers(1, T + 1), max(1, T - 1)], B)
    mask = (np.arange(T) < lengths[:, None]).astype(np.int64)              # (B, T)
    if gaps:
        mask = mask * (rng.random((B, T)) < 0.7)
        mask[:, 0] = 1
    real = np.flatnonzero(mask)
    positions = rng.choice(real, min(len(real), 2 * B), replace=False)
    labels = rng.integers(0, CONFIG.vocab_size, len(positions))
    labels[::4] = IGNORE_INDEX
    return dict(input_ids=rng.integers(1, CONFIG.vocab_size, (B, T)) * mask, attention_mask=mask,
                token_type_ids=(rng.random((B, T)) < 0.5) * mask, mlm_positions=positions, mlm_labels=labels,
                nsp_labels=rng.integers(0, 2, B))


def params_of(seed, dtype=np.float64):
    p = init_params(CONFIG, np.random.default_rng(seed), dtype=np.float64)
    noise = np.random.default_rng(seed + 1)
    return {k: (v + 0.1 * noise.standard_normal(v.shape)).astype(dtype) for k, v in p.items()}   # LN, biases non-trivial


def assert_same_gradients(got, want, tol):
    """Every gradient within tol of the largest: the key biases' are 0 in exact arithmetic (a bias
    under a softmax), so their rounding noise is compared against the scale, never on its own."""
    assert set(got) == set(want)
    scale = max(np.abs(g).max() for g in want.values())
    for k in want:
        assert np.abs(got[k] - want[k]).max() <= tol * scale, k


def step(forward, backward, params, b, seed, **kw):
    rng = np.random.default_rng(seed)
    out, cache = forward(params, CONFIG, **b, rng=rng, **kw)
    return out, backward(cache), rng.random()                 # what the generator gives next


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@SETTINGS
@given(seed=st.integers(0, 999), B=st.integers(1, 4), T=st.integers(1, 12), gaps=st.booleans(),
       dropout=st.booleans())
def test_packed_pretraining_step_is_the_padded_one(backend, seed, B, T, gaps, dropout):
    b = batch(seed, B, T, gaps)
    p64 = params_of(seed)
    with npbert.backend.use_backend(backend):
        drop = seed + 7 if dropout else None
        want, g_want, next_want = step(pretraining_forward, pretraining_backward, p64, b, drop or 0)
        got, g_got, next_got = step(pretraining_forward, pretraining_backward, p64, b, drop or 0, packed=True)
        got32, g32, _ = step(pretraining_forward, pretraining_backward, params_of(seed, np.float32), b, drop or 0,
                             packed=True)
    assert next_got == next_want                              # the same draws: the same dropout masks
    for key in ("loss", "mlm_loss", "nsp_loss"):
        assert abs(got[key] - want[key]) <= 1e-12 * max(1.0, abs(want[key])), key
        assert abs(got32[key] - want[key]) <= 2e-6 * max(1.0, abs(want[key])), key
    assert "mlm_logits" not in got and "mlm_logits" in want                # fused: no (M, V) logits made
    logits = step(pretraining_forward, pretraining_backward, p64, b, drop or 0, packed=True, mlm_logits=True)[0]
    assert np.abs(logits["mlm_logits"] - want["mlm_logits"]).max() <= 1e-12 * np.abs(want["mlm_logits"]).max()
    top2 = np.sort(want["mlm_logits"], axis=1)[:, -2:]                      # a prediction decided by more than
    clear = top2[:, 1] - top2[:, 0] > 1e-9 * np.abs(top2).max(initial=1.0)  # rounding must be the same
    assert (got["mlm_predictions"][clear] == want["mlm_logits"].argmax(axis=1)[clear]).all()
    assert_same_gradients(g_got, g_want, 1e-12)
    assert_same_gradients(g32, g_want, 2e-6)


def test_the_last_layer_runs_at_the_read_rows_only():
    b = batch(3, 4, 12, False)
    out, cache = pretraining_forward(params_of(0), CONFIG, **b, packed=True)
    layout = cache.bert.layout
    rows = layout.read_rows
    read = np.unique(np.concatenate([layout.row_of(b["mlm_positions"]), layout.starts]))
    assert (rows == read).all() and len(rows) < len(layout.flat)
    last, first = cache.bert.encoder.layers[-1], cache.bert.encoder.layers[0]
    assert last.attention.query.x2.shape[0] == len(rows) and last.attention.key.x2.shape[0] == len(layout.flat)
    assert first.attention.query.x2.shape[0] == len(layout.flat)          # every other layer: every real token


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_last_layer_at_every_row_rounds_as_the_other_layers(backend, seed):
    """Read at every real token, the last layer still runs on x[read_rows] with memory x (encoder.py),
    and must give every number bit for bit as when it computes every row: its input gradient summed
    in the same order, keys' + queries', then values', then the residual's (float addition does not
    associate; a run replays bit for bit in one order only). float32, dropout on."""
    b = batch(seed, 4, 12, gaps=True)
    params = params_of(seed, np.float32)
    inputs = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    every = np.flatnonzero(b["attention_mask"])                                 # (N,) every real token
    noise = np.random.default_rng(seed + 2)
    dh = noise.standard_normal((len(every), CONFIG.hidden_size)).astype(np.float32)           # (N, H)
    dpooled = noise.standard_normal((len(b["nsp_labels"]), CONFIG.hidden_size)).astype(np.float32)
    results = []
    with npbert.backend.use_backend(backend):
        for read in (every, None):                                              # memory x, then every row
            (h, pooled), cache = bert_forward(params, CONFIG, **inputs, rng=np.random.default_rng(seed + 7),
                                              packed=True, read=read)
            assert (cache.layout.read_rows is None) == (read is None)
            results.append((h, pooled, bert_backward(dh, dpooled, cache)))
    (h, pooled, grads), (h_all, pooled_all, grads_all) = results
    assert np.array_equal(h, h_all) and np.array_equal(pooled, pooled_all)
    differ = [k for k in grads_all if not np.array_equal(grads.get(k), grads_all[k])]
    assert grads.keys() == grads_all.keys() and not differ, differ


def test_the_layouts_say_which_rows_and_drop_the_same_elements():
    mask = np.array([[1, 1, 1, 0], [1, 0, 1, 1]])                     # a gap in sequence 1
    padded, packed = Padded(mask, np.float64), Packed(mask, read=[1, 6], cls=True)
    assert padded.positions.tolist() == [0, 1, 2, 3] * 2 and packed.positions.tolist() == [0, 1, 2, 0, 2, 3]
    assert packed.starts.tolist() == [0, 3] and packed.read_rows.tolist() == [0, 1, 3, 4]   # read and [CLS]
    assert packed.index([6, 1]).tolist() == [3, 1] and packed.cls_index().tolist() == [0, 2]   # rows of h (R, H)
    assert padded.index([6, 1]).tolist() == [6, 1] and padded.cls_index().tolist() == [0, 4]  # every row computed
    x = np.arange(8.0)[:, None] * np.ones((1, 3))                       # (B*T, 3): row b*T + t holds b*T + t
    rows = packed.rows_of(x.reshape(2, 4, 3))                           # (N, 3)
    assert (padded.rows_of(x.reshape(2, 4, 3)) == x).all() and (rows[:, 0] == [0, 1, 2, 4, 6, 7]).all()
    assert (packed.batched(rows).reshape(8, 3)[[3, 5]] == 0).all()      # padding: zeros
    y_pad, _ = padded.dropout(x, 0.5, np.random.default_rng(0))
    y_all, _ = packed.dropout(rows, 0.5, np.random.default_rng(0))
    y_read, _ = packed.reading().dropout(rows[packed.read_rows], 0.5, np.random.default_rng(0))   # the last layer's
    assert (y_all == y_pad[packed.flat]).all() and (y_read == y_pad[packed.flat[packed.read_rows]]).all()


def head_batch(kind, seed, B, T, gaps):
    b = batch(seed, B, T, gaps)
    inputs = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    rng = np.random.default_rng(seed + 2)
    if kind == "multiple_choice":                             # C = 2 choices: (B, 2, T)
        inputs = {k: np.stack([v, v[::-1]], axis=1) for k, v in inputs.items()}
        return inputs, dict(labels=rng.integers(0, 2, B))
    if kind == "token_classification":                       # padding scores nothing, as encoded data has it
        labels = np.where(b["attention_mask"] == 1, rng.integers(0, 3, (B, T)), IGNORE_INDEX)
        return inputs, dict(labels=labels)
    return inputs, dict(labels=rng.integers(0, 3, B))


@pytest.mark.parametrize("kind", ["sequence_classification", "token_classification", "multiple_choice"])
@SETTINGS
@given(seed=st.integers(0, 999), B=st.integers(1, 3), T=st.integers(2, 10), gaps=st.booleans())
def test_packed_task_model_is_the_padded_one(kind, seed, B, T, gaps):
    head = HEADS[kind]
    params = params_of(seed)
    params.update(init_head(CONFIG, head, 1 if kind == "multiple_choice" else 3, np.random.default_rng(seed), np.float64))
    inputs, targets = head_batch(kind, seed, B, T, gaps)
    results = []
    for packed in (False, True):
        rng = np.random.default_rng(seed)
        out, cache = task_model_forward(head, params, CONFIG, **inputs, rng=rng, packed=packed, **targets)
        results.append((out, task_model_backward(1.0, cache)))
    (want, g_want), (got, g_got) = results
    assert abs(got["loss"] - want["loss"]) <= 1e-12 * max(1.0, abs(want["loss"]))
    assert_same_gradients(g_got, g_want, 1e-12)


def test_rows_the_heads_read_must_be_real_tokens():
    b = batch(0, 2, 6, False)
    b["attention_mask"][1, 4:] = 0
    b["mlm_positions"], b["mlm_labels"] = np.array([1, 6 + 5]), np.array([3, 4])   # sequence 1, position 5: padding
    with pytest.raises(InputError, match=r"sequence 1, position 5\), a padded position"):
        pretraining_forward(params_of(0), CONFIG, **b, packed=True)
    b = batch(0, 2, 6, False)
    b["attention_mask"][0, 0] = 0                             # left padding: [CLS] is padding
    with pytest.raises(InputError, match=r"attention_mask\[0, 0\] is 0"):
        pretraining_forward(params_of(0), CONFIG, **{**b, "mlm_positions": None, "mlm_labels": None}, packed=True)


def test_a_trace_records_the_padded_layout_only():
    with pytest.raises(InputError, match="a trace records the padded reference"):
        pretraining_forward(params_of(0), CONFIG, **batch(0, 2, 6, False), trace=Trace(), packed=True)
