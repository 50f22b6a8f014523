"""Make tests/fixtures/pretraining_gradients.npz: the BertForPreTraining loss and the gradient of
every parameter, computed by PyTorch autograd through Hugging Face's model in float64, for a
small random model. tests/model/test_hf_parity.py holds npbert's hand-written backward to them.

Needs torch and transformers (reference scripts only; the test suite does not):
    python tests/reference/make_gradient_fixture.py
"""
import datetime
import json
import os
import platform

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import torch
import transformers

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "pretraining_gradients.npz")
CONFIG = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              max_position_embeddings=16, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)
PAD, CLS, SEP = 0, 2, 3
LENGTHS = (12, 9, 6)   # real tokens per row of the (3, 12) batch; the rest is padding


def make_batch(rng):
    """[CLS] a [SEP] b [SEP] rows, padded with PAD only where attention_mask is 0."""
    B, T = len(LENGTHS), max(LENGTHS)
    input_ids = np.full((B, T), PAD, dtype=np.int64)
    token_type_ids = np.zeros((B, T), dtype=np.int64)
    attention_mask = np.zeros((B, T), dtype=np.int64)
    for i, n in enumerate(LENGTHS):
        a = (n - 3) // 2                                          # length of segment A
        input_ids[i, :n] = rng.integers(5, CONFIG["vocab_size"], n)   # real tokens never PAD
        input_ids[i, [0, a + 1, n - 1]] = CLS, SEP, SEP
        token_type_ids[i, a + 2:n] = 1
        attention_mask[i, :n] = 1
    labels = np.full((B, T), -100, dtype=np.int64)
    for i, n in enumerate(LENGTHS):                               # 2 or 3 predictions per row
        words = np.flatnonzero(input_ids[i, :n] > SEP)           # never [CLS] or [SEP]
        chosen = rng.choice(words, size=min(3, len(words)), replace=False)
        labels[i, chosen] = input_ids[i, chosen]
        input_ids[i, chosen[:-1]] = 4                             # [MASK]; the last one left unchanged
    next_sentence_label = np.array([0, 1, 1], dtype=np.int64)
    return dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                labels=labels, next_sentence_label=next_sentence_label)


def npbert_names(model) -> list:
    """Parameter names as npbert keys them: HF's, minus the decoder tied to the embeddings."""
    return [n for n, _ in model.named_parameters() if not n.startswith("cls.predictions.decoder.")]


def main():
    torch.manual_seed(0)
    model = transformers.BertForPreTraining(transformers.BertConfig(**CONFIG, attn_implementation="eager"))
    model = model.double().eval()
    decoder, words = model.cls.predictions.decoder, model.bert.embeddings.word_embeddings
    assert decoder.weight is words.weight, "HF should tie the decoder to the word embeddings"
    assert decoder.bias is model.cls.predictions.bias, "HF should tie the decoder bias to cls.predictions.bias"
    # Re-draw every parameter, LayerNorm weights and biases too (HF starts them at 1 and 0), so each
    # gradient is checked at a generic point; std 0.5/sqrt(fan-in) keeps activations O(1).
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5 / p.shape[-1] ** 0.5 + name.endswith("LayerNorm.weight"))
    batch = make_batch(np.random.default_rng(0))
    out = model(**{k: torch.from_numpy(v) for k, v in batch.items()})
    out.loss.backward()
    params = dict(model.named_parameters())
    names = npbert_names(model)
    arrays = {f"param/{n}": params[n].detach().numpy() for n in names}
    arrays.update({f"grad/{n}": params[n].grad.numpy() for n in names})
    meta = dict(source="transformers.BertForPreTraining, random weights, loss.backward()", config=CONFIG,
                torch=torch.__version__, transformers=transformers.__version__, numpy=np.__version__,
                python=platform.python_version(), dtype="float64", device="cpu", attn_implementation="eager",
                date=datetime.date.today().isoformat(), script="tests/reference/make_gradient_fixture.py",
                loss="HF: mean MLM cross-entropy over labelled positions + mean NSP cross-entropy",
                tied_decoder="grad of bert.embeddings.word_embeddings.weight includes the decoder's share "
                             "(HF ties the tensors; autograd accumulates both uses)",
                padding_idx="HF's word embedding gives row pad_token_id=0 no gradient from the lookup; PAD "
                            "appears only where attention_mask is 0, whose gradient is exactly 0 anyway, so "
                            "the fixture does not depend on it")
    np.savez_compressed(FIXTURE, **batch, **arrays, loss=out.loss.detach().numpy(),
                        prediction_logits=out.prediction_logits.detach().numpy(),
                        seq_relationship_logits=out.seq_relationship_logits.detach().numpy(),
                        metadata=json.dumps(meta))
    print(f"wrote {os.path.normpath(FIXTURE)} ({os.path.getsize(FIXTURE)} bytes), "
          f"{len(names)} parameters, loss {out.loss.item():.12f}")


if __name__ == "__main__":
    main()
