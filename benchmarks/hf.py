"""Hugging Face BertForPreTraining on PyTorch CPU, on the same config and batch, for comparison.

Only the benchmark imports this (torch and transformers are not npbert dependencies). Two variants:
- "hf": BertForPreTraining called as is, with (B, T) MLM labels: it computes the MLM decoder
  at all B*T positions (HF's behaviour), i.e. ~6x more decoder work than npbert at vocab 30,522;
- "hf-masked": the same modules, with the MLM head applied to the masked positions only, as
  npbert and the original BERT do: the like-for-like engine comparison.
The train step is forward + backward + global-norm clipping + torch.optim.AdamW (weight decay
off for LayerNorm and biases, as npbert), as npbert's step in workload.py.
"""
from __future__ import annotations


def hf_steps(config, batch: dict, variant: str, threads: int, seed: int = 0):
    import torch
    import transformers

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    fields = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
              "type_vocab_size", "layer_norm_eps")
    model = transformers.BertForPreTraining(transformers.BertConfig(**{f: getattr(config, f) for f in fields}))
    decay = [p for n, p in model.named_parameters() if not (n.endswith(".bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith(".bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, eps=1e-6)
    B, T = batch["input_ids"].shape
    ids, types, mask = (torch.from_numpy(batch[k]) for k in ("input_ids", "token_type_ids", "attention_mask"))
    positions, labels = torch.from_numpy(batch["mlm_positions"]), torch.from_numpy(batch["mlm_labels"])
    nsp = torch.from_numpy(batch["nsp_labels"])
    full_labels = torch.full((B * T,), -100, dtype=torch.long)
    full_labels[positions] = labels
    full_labels = full_labels.view(B, T)

    def loss_fn():
        if variant == "hf":
            return model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=full_labels,
                         next_sentence_label=nsp).loss
        seq, pooled = model.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)[:2]
        scores = model.cls.predictions(seq.reshape(B * T, -1)[positions])     # (N, V) masked rows only
        ce = torch.nn.functional.cross_entropy
        return ce(scores, labels) + ce(model.cls.seq_relationship(pooled), nsp)

    def train_step():
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss)

    def infer_step():
        model.eval()
        with torch.inference_mode():
            return float(loss_fn())

    return train_step, infer_step


def versions() -> dict:
    try:
        import torch
        import transformers
    except ImportError:
        return {}
    return {"torch": torch.__version__, "transformers": transformers.__version__}


def missing() -> list:
    """The packages of torch and transformers that are not installed."""
    import importlib.util
    return [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]


def available() -> bool:
    return not missing() and bool(versions())

