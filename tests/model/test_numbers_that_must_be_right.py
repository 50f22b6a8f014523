"""The numbers a port must match (docs/design.md, "Numbers that must be right"), pinned one by one:
BERT's config defaults, and the attention mask: finfo(dtype).min, so that a padded key gets
probability exactly 0 and gradient exactly 0 whatever its score, on both backends."""
import numpy as np
import pytest

from npbert import backend
from npbert.config import BertConfig
from npbert.ops import split_heads
from npbert.ops import attention_mask_bias

DTYPES = [np.float32, np.float64]


def test_config_defaults_are_berts():
    # google-research/bert's BertConfig and Hugging Face's: a config.json that leaves a field out
    # means these values, so a different default would silently change a loaded model
    sizes = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
    numerics = dict(hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)
    for config in (BertConfig(), BertConfig.from_dict({})):
        assert {k: getattr(config, k) for k in {**sizes, **numerics}} == {**sizes, **numerics}
    tiny = BertConfig.from_preset("tiny")          # a preset changes the sizes only
    assert {k: getattr(tiny, k) for k in numerics} == numerics
    assert (tiny.vocab_size, tiny.max_position_embeddings, tiny.type_vocab_size) == (30522, 512, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_mask_bias_is_the_dtypes_minimum(dtype):
    # Hugging Face's value: not the -10000 of older code, which a score of 1e4 would overcome
    bias = attention_mask_bias(np.array([[1, 1, 0], [1, 0, 0]]), dtype)
    assert bias.dtype == dtype and bias.shape == (2, 3)
    assert bias[0, 2] == bias[1, 1] == bias[1, 2] == np.finfo(dtype).min
    assert (bias[[0, 0, 1], [0, 1, 0]] == 0).all()


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pad_score", [None, 2e4])
@pytest.mark.parametrize("p_drop", [0.0, 0.1])
def test_a_padded_key_gets_exactly_zero_probability_and_gradient(backend_name, dtype, pad_score, p_drop):
    """pad_score None: scores of a trained model's size (|q.k|/sqrt(D) ~10); 2e4: the
    padded keys' scores are 2e4 above the rest, so a -10000 mask would leave them most of the
    probability, while finfo.min + 2e4 is still finfo.min and its exp is exactly 0."""
    B, A, T, D = 2, 2, 5, 4
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    pad = mask == 0                                                     # (B, T)
    q, k, dctx = (split_heads(rng.standard_normal((B, T, A * D)) * 3, A) for _ in range(3))  # (B, A, T, D)
    if pad_score is not None:                                           # q >= 1 and k_pad = pad_score / sqrt(D):
        q = np.abs(q) + 1                                               # q . k_pad / sqrt(D) = pad_score mean(q)
        k = np.where(pad[:, None, :, None], pad_score / np.sqrt(D), k)  # >= pad_score for every query
    # v[..., 0]: 1 at a padded key, 0 at a real one, so context[..., 0] is exactly the padded
    # keys' probability; the other columns random, so the real keys get gradients
    v = split_heads(rng.standard_normal((B, T, A * D)), A).copy()      # (B, A, T, D)
    v[..., 0] = pad[:, None, :]
    q, k, v, dctx = (x.astype(dtype) for x in (q, k, v, dctx))
    with backend.use_backend(backend_name):
        context, cache = backend.attention_core_forward(q, k, v, attention_mask_bias(mask, dtype), p_drop,
                                                        np.random.default_rng(1) if p_drop else None)
        dq, dk, dv = backend.attention_core_backward(dctx, cache)
    assert context.dtype == dtype and (context[..., 0] == 0).all(), "a padded key got probability above 0"
    padded = np.broadcast_to(pad[:, None, :, None], dk.shape)
    assert (dk[padded] == 0).all() and (dv[padded] == 0).all(), "a padded key got a gradient"
    assert (dk[~padded] != 0).any() and (dq != 0).any() and np.isfinite(dq).all()
