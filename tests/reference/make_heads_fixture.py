"""Make tests/fixtures/heads_gradients.npz: the loss, the logits and the gradient of every parameter
of Hugging Face's BertForSequenceClassification (classification and regression),
BertForTokenClassification, BertForQuestionAnswering and BertForMultipleChoice, by PyTorch
autograd in float64 on one small random model, in eval mode (no dropout). tests/model/test_heads.py
holds npbert's heads (npbert/heads/, run by npbert/heads/task_model.py) to them. The BertModel
weights are shared by the five models and stored once, under seq/param/bert.*; each model's
head under <prefix>/param/.

It also checks that a checkpoint npbert saves for each head (npbert.checkpoint.save_pretrained
with npbert.heads.params.finetuned_config) opens in the matching transformers class with the same weights.

Needs torch and transformers (reference scripts only; the test suite does not):
    python tests/reference/make_heads_fixture.py
"""
import datetime
import json
import os
import platform
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import torch
import transformers

from npbert.checkpoint import save_pretrained
from npbert.config import BertConfig
from npbert.heads.params import finetuned_config
from npbert.heads.registry import HEADS as NPBERT_HEADS

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "heads_gradients.npz")
CONFIG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=20,
              max_position_embeddings=16, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)
LENGTHS = (10, 7, 4)          # real tokens per row of the (3, 10) batch; the rest is padding
NUM_CHOICES = 3
# fixture prefix -> (transformers class, npbert kind, num_labels)
HEADS = {
    "seq": (transformers.BertForSequenceClassification, "sequence_classification", 3),
    "reg": (transformers.BertForSequenceClassification, "sequence_classification", 1),
    "tok": (transformers.BertForTokenClassification, "token_classification", 4),
    "qa": (transformers.BertForQuestionAnswering, "question_answering", 2),
    "mc": (transformers.BertForMultipleChoice, "multiple_choice", 2),
}


def make_inputs(rng, B, T):
    input_ids = rng.integers(5, CONFIG["vocab_size"], (B, T))
    attention_mask = (np.arange(T)[None, :] < np.array(LENGTHS[:B])[:, None]).astype(np.int64)
    input_ids[attention_mask == 0] = 0
    input_ids[:, 0] = 2
    token_type_ids = (np.arange(T)[None, :] >= 3).astype(np.int64) * attention_mask
    return dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)


def make_batch(prefix, rng):
    B, T = len(LENGTHS), max(LENGTHS)
    if prefix == "mc":
        rows = [make_inputs(rng, B, T) for _ in range(NUM_CHOICES)]
        batch = {k: np.stack([r[k] for r in rows], axis=1) for k in rows[0]}     # (B, C, T)
        batch["labels"] = np.array([2, 0, 1])
        return batch
    batch = make_inputs(rng, B, T)
    if prefix == "seq":
        batch["labels"] = np.array([2, 0, 1])
    elif prefix == "reg":
        batch["labels"] = np.array([0.5, -1.25, 2.0])
    elif prefix == "tok":
        labels = rng.integers(0, 4, (B, T))
        labels[batch["attention_mask"] == 0] = -100
        labels[:, 0] = -100
        batch["labels"] = labels
    else:  # qa: one start beyond the window (HF clamps it to T and ignores it), one end negative (-> 0)
        batch["start_positions"] = np.array([3, 1, T + 5])
        batch["end_positions"] = np.array([5, -1, 2])
    return batch


def main():
    arrays, checked = {}, []
    torch.manual_seed(0)
    shared = None
    for prefix, (cls, kind, num_labels) in HEADS.items():
        hf_config = transformers.BertConfig(**CONFIG, num_labels=num_labels, attn_implementation="eager",
                                            problem_type="regression" if prefix == "reg" else None)
        model = cls(hf_config).double().eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if shared is not None and name in shared:
                    p.copy_(shared[name])            # one BertModel for every head
                else:
                    p.copy_(torch.randn_like(p) * 0.5 / p.shape[-1] ** 0.5 + name.endswith("LayerNorm.weight"))
        if shared is None:
            shared = {n: p.detach().clone() for n, p in model.named_parameters() if n.startswith("bert.")}
        batch = make_batch(prefix, np.random.default_rng(len(arrays)))
        out = model(**{k: torch.from_numpy(v) for k, v in batch.items()})
        out.loss.backward()
        for name, p in model.named_parameters():
            if not name.startswith("bert.") or prefix == "seq":   # the shared BertModel is stored once
                arrays[f"{prefix}/param/{name}"] = p.detach().numpy()
            arrays[f"{prefix}/grad/{name}"] = p.grad.numpy()
        arrays.update({f"{prefix}/input/{k}": v for k, v in batch.items()})
        arrays[f"{prefix}/loss"] = out.loss.detach().numpy()
        for k in ("logits", "start_logits", "end_logits"):
            if getattr(out, k, None) is not None:
                arrays[f"{prefix}/{k}"] = getattr(out, k).detach().numpy()
        checked.append(check_npbert_checkpoint_opens_in_hf(prefix, cls, kind, num_labels, model, shared))
    meta = dict(source="transformers BertFor{SequenceClassification,TokenClassification,QuestionAnswering,"
                       "MultipleChoice}, random weights, eval mode, loss.backward()", config=CONFIG,
                heads={p: [c.__name__, k, n] for p, (c, k, n) in HEADS.items()},
                torch=torch.__version__, transformers=transformers.__version__, numpy=np.__version__,
                python=platform.python_version(), dtype="float64", device="cpu", attn_implementation="eager",
                date=datetime.date.today().isoformat(), script="tests/reference/make_heads_fixture.py",
                npbert_checkpoints_open_in_transformers=checked)
    np.savez_compressed(FIXTURE, **arrays, metadata=json.dumps(meta))
    print(f"wrote {os.path.normpath(FIXTURE)} ({os.path.getsize(FIXTURE)} bytes); "
          f"npbert checkpoints open in transformers: {checked}")


def check_npbert_checkpoint_opens_in_hf(prefix, cls, kind, num_labels, model, shared):
    """Save the model's weights with npbert, reopen with transformers, compare every tensor.
    npbert keeps the pooler in every checkpoint; the token-classification and QA classes have
    none (add_pooling_layer=False) and skip it on loading."""
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    pooler = {n: p.numpy() for n, p in shared.items() if n.startswith("bert.pooler.")}
    labels = [f"label_{i}" for i in range(num_labels)] if kind.endswith("classification") else None
    config = finetuned_config(BertConfig(**CONFIG), NPBERT_HEADS[kind], labels)
    with tempfile.TemporaryDirectory() as tmp:
        save_pretrained(tmp, config, {**pooler, **params})
        reopened = cls.from_pretrained(tmp, torch_dtype=torch.float64)
    state = reopened.state_dict()
    for name, a in params.items():
        assert np.array_equal(state[name].numpy(), a), f"{prefix}: {name} differs after the round trip"
    assert reopened.config.architectures == [cls.__name__]
    if labels:
        assert reopened.config.num_labels == num_labels, reopened.config.num_labels
        assert reopened.config.id2label == dict(enumerate(labels)), reopened.config.id2label
    if prefix == "reg":
        assert reopened.config.problem_type == "regression"
    return cls.__name__


if __name__ == "__main__":
    main()
