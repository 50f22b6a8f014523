"""A corpus whose every token tells its document, written as prepared-data shards without a
tokenizer: tests/data/test_shards.py reads it back, tests/data/test_fuzz_manifest.py damages it."""
import numpy as np

from npbert.data import prepare as prep

# 40 documents; document d uses only the ids 10*d .. 10*d+9, so every token tells its document.
TOKENS = [f"w{i}" for i in range(400)] + ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, CLS, SEP, MASK = 400, 402, 403, 404


def documents(num_documents=40, seed=0):
    rng = np.random.default_rng(seed)
    return [[[10 * d + int(k) for k in rng.integers(0, 10, size=int(rng.integers(3, 12)))]
             for _ in range(int(rng.integers(3, 10)))] for d in range(num_documents)]


def options(**overrides):
    kw = dict(corpus="builtin", max_seq_length=32, max_predictions_per_seq=5, dupe_factor=3,
              heldout_fraction=0.1, seed=7, tokens_per_shard=700)
    kw.update(overrides)
    return prep.resolved_options(prep.PrepareOptions(**kw))


def write(directory, docs=None, **overrides):
    return prep.write_pretraining_data(str(directory), docs or documents(), TOKENS, options(**overrides),
                                       log=lambda *a: None)
