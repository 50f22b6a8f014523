"""Open an npbert checkpoint in Hugging Face transformers and compare the two models' outputs.

    python tests/reference/check_hf_roundtrip.py [CHECKPOINT_DIR]

Without a directory, a random npbert model is made, saved with save_pretrained into a temporary
directory and checked. Loads the directory with npbert.load_pretrained and with
transformers.BertForPreTraining.from_pretrained (float32, CPU), runs both on one padded batch and
prints the max abs difference of the MLM logits (at the masked positions) and NSP logits (or of
the hidden states and pooler output, for a checkpoint without pretraining heads), and whatever
transformers reported about missing or unexpected weights; then saves the model again with
transformers' save_pretrained and checks npbert reads back the same weights. Exits 1 if anything
disagrees.
Needs torch and transformers (reference scripts only).
"""
import argparse
import logging
import os
import sys
import tempfile
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"   # local files only, never the hub

import numpy as np
import torch
import transformers

from npbert.checkpoint import load_pretrained, save_pretrained
from npbert.config import BertConfig
from npbert.model import bert_forward, pretraining_forward
from npbert.model_params import init_params

TOLERANCE = 1e-4   # float32 outputs of two implementations of the same model


def make_random_checkpoint(directory):
    config = BertConfig(vocab_size=120, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64)
    rng = np.random.default_rng(0)
    params = init_params(config, rng, np.float32)
    for a in params.values():   # LayerNorm weights 1 and biases 0 would hide a mix-up: perturb them all
        a += rng.normal(0, 0.1, a.shape).astype(np.float32)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(config.vocab_size - 5)]
    save_pretrained(directory, config, params, vocab)


def make_batch(config, rng, B=4, T=24):
    lengths = np.linspace(T, T // 3, B).astype(int)                # one full row, the others padded
    input_ids = rng.integers(5, config.vocab_size, (B, T))
    input_ids[:, 0] = 2
    attention_mask = (np.arange(T) < lengths[:, None]).astype(np.int64)
    input_ids[attention_mask == 0] = 0
    token_type_ids = ((np.arange(T) >= lengths[:, None] // 2) & (attention_mask == 1)).astype(np.int64)
    mlm_positions = np.concatenate([i * T + rng.choice(np.arange(1, n), 3, replace=False)
                                    for i, n in enumerate(lengths)])
    return input_ids, token_type_ids, attention_mask, np.sort(mlm_positions)


def load_hf(directory):
    """BertForPreTraining.from_pretrained, with its loading report and any log lines it printed."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model, info = transformers.BertForPreTraining.from_pretrained(
                directory, output_loading_info=True, dtype=torch.float32, local_files_only=True)
    finally:
        logger.removeHandler(handler)
    messages = [r.getMessage() for r in records if r.levelno >= logging.WARNING] + [str(w.message) for w in caught]
    return model.eval(), info, messages


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", help="checkpoint directory (default: a fresh random model)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.directory or os.path.join(tmp, "random-npbert")
        if not args.directory:
            make_random_checkpoint(directory)
        ours = load_pretrained(directory, np.float32)
        hf, info, messages = load_hf(directory)
        hf.save_pretrained(os.path.join(tmp, "saved-by-transformers"))   # and back: HF's own file
        back = load_pretrained(os.path.join(tmp, "saved-by-transformers"), np.float32).params
    config, params = ours.config, ours.params
    ids, types, mask, positions = make_batch(config, np.random.default_rng(1))
    with torch.no_grad():
        theirs = hf(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                    attention_mask=torch.from_numpy(mask), output_hidden_states=True)
    print(f"checkpoint: {args.directory or 'random npbert model (made by this script)'}")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, float32, CPU, "
          f"attention {hf.config._attn_implementation}")
    print("loading info:", {k: sorted(v) if isinstance(v, (set, list)) else v for k, v in info.items()})
    print("transformers warnings:", messages or "none")
    heads = any(name.startswith("cls.") for name in params)
    if heads:
        out, _ = pretraining_forward(params, config, ids, types, mask, mlm_positions=positions)
        hf_mlm = theirs.prediction_logits.numpy().reshape(-1, config.vocab_size)[positions]
        diffs = {"MLM logits at masked positions": max_diff(out["mlm_logits"], hf_mlm),
                 "NSP logits": max_diff(out["nsp_logits"], theirs.seq_relationship_logits.numpy())}
        scale = np.abs(hf_mlm).max()
    else:   # no heads in the checkpoint: transformers made random ones, so compare the encoder
        (h, pooled), _ = bert_forward(params, config, ids, types, mask)
        real = mask == 1
        last = theirs.hidden_states[-1].numpy()
        diffs = {"hidden states at real tokens": max_diff(h[real], last[real]),
                 "pooler output": max_diff(pooled, hf.bert.pooler.activation(hf.bert.pooler.dense(
                     theirs.hidden_states[-1][:, 0])).detach().numpy())}
        scale = np.abs(last).max()
    same = sorted(back) == sorted(params) and all(np.array_equal(back[n], params[n]) for n in params)
    if heads:
        print("saved again by transformers and reloaded by npbert:", "bit-identical" if same else "DIFFERENT")
    for what, d in diffs.items():
        print(f"max abs difference, {what}: {d:.3g}")
    print(f"(largest |value| compared: {scale:.3g}; tolerance {TOLERANCE})")
    # a checkpoint without heads leaves transformers' cls.* missing (randomly initialised), nothing else
    missing = [k for k in info["missing_keys"] if heads or not k.startswith("cls.")]
    ok = max(diffs.values()) <= TOLERANCE and (same or not heads) and not missing and not info["unexpected_keys"] \
        and not info["mismatched_keys"]
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
