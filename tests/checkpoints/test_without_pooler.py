"""Hugging Face models built without a pooler (token classification, QA) load and run."""
import numpy as np

from npbert import init_params, load_pretrained, save_pretrained
from npbert.gradcheck import Dims
from npbert.model import bert_backward, bert_forward


def test_checkpoint_without_pooler(tmp_path):
    c = Dims().config()
    p = init_params(c, np.random.default_rng(0), np.float64, heads=False)
    del p["bert.pooler.dense.weight"], p["bert.pooler.dense.bias"]
    save_pretrained(str(tmp_path), c, p)
    loaded = load_pretrained(str(tmp_path), dtype=np.float64)
    assert set(loaded.params) == set(p)
    (h, pooled), cache = bert_forward(loaded.params, c, np.array([[1, 2, 3]]))
    assert pooled is None and h.shape == (1, 3, c.hidden_size)
    assert set(bert_backward(np.ones_like(h), None, cache)) == set(p)
