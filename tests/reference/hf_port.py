"""Hugging Face's classes as a port: run transformers' BertForPreTraining and the four task models
on npbert's golden whole-model cases and write what `npbert conform` compares.

    npbert golden --out /tmp/golden
    python tests/reference/hf_port.py /tmp/golden /tmp/hf_results
    npbert conform /tmp/golden /tmp/hf_results --only "bert_for_*"

Reads only the golden files and manifest.json (npbert is not imported). Intermediates come from
forward hooks on the modules the trace is named after (docs/model.md: the names are HF's module
paths), attention probabilities from output_attentions, their gradients from retain_grad. What
HF does not compute as a module output (bert.mask_bias, .sum, .scores) is not given; conform
says so. BertForPreTraining computes the MLM head at every position: its logits are gathered at
the golden's flat mlm_positions and the loss is taken on them (a position listed twice counts
twice, as in the golden), and the MLM head's intermediate gradients are left out (HF's
(B, T, H) gradient sums a repeated position's two rows). Parameters HF's model does not have
(the pooler of the token-classification and QA models) get the gradient 0 they have in the
golden: nothing reads them.

Needs torch and transformers (reference scripts only; the test suite does not).
"""
import argparse
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file, save_file

CLASSES = {
    "bert_for_pretraining": (transformers.BertForPreTraining, 2),
    "bert_for_sequence_classification": (transformers.BertForSequenceClassification, 3),
    "bert_for_sequence_regression": (transformers.BertForSequenceClassification, 1),
    "bert_for_token_classification": (transformers.BertForTokenClassification, 3),
    "bert_for_question_answering": (transformers.BertForQuestionAnswering, 2),
    "bert_for_multiple_choice": (transformers.BertForMultipleChoice, 2),
}
TORCH_DTYPE = {"float64": torch.float64, "float32": torch.float32}


def hf_model(manifest, name, dtype, params):
    cls, num_labels = CLASSES[name]
    config = transformers.BertConfig(**{k: v for k, v in manifest["config"].items() if k != "architectures"},
                                     num_labels=num_labels, attn_implementation="eager")
    model = cls(config).to(TORCH_DTYPE[dtype]).eval()
    state = {k: torch.from_numpy(v) for k, v in params.items() if k in model.state_dict()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}, \
        (missing, unexpected)
    return model


def run_case(manifest, golden_dir, entry):
    golden = load_file(os.path.join(golden_dir, entry["file"]))
    roles = {t["name"]: t["role"] for t in entry["tensors"]}
    inputs = {k: torch.from_numpy(v) for k, v in golden.items() if roles[k] == "input"}
    params = {k: v for k, v in golden.items() if roles[k] == "param"}
    model = hf_model(manifest, entry["name"], entry["dtype"], params)
    positions = inputs.pop("mlm_positions", None)

    captured = {}                                   # trace name -> the tensor HF made there

    def hook(name):
        def keep(module, args, output):
            out = output[0] if isinstance(output, tuple) else output
            if out.requires_grad:
                out.retain_grad()
            captured[name] = out
        return keep
    wanted = set(entry.get("forward_order", []))
    for name, module in model.named_modules():
        if name in wanted:
            module.register_forward_hook(hook(name))

    if entry["name"] == "bert_for_pretraining":
        mlm_labels, nsp_labels = inputs.pop("mlm_labels"), inputs.pop("nsp_labels")
        out = model(**inputs, output_attentions=True)
        B, T = inputs["input_ids"].shape
        mlm_logits = out.prediction_logits.reshape(B * T, -1)[positions]
        ce = torch.nn.functional.cross_entropy
        mlm_loss, nsp_loss = ce(mlm_logits, mlm_labels), ce(out.seq_relationship_logits, nsp_labels)
        loss = mlm_loss + nsp_loss
        outputs = dict(loss=loss, mlm_loss=mlm_loss, nsp_loss=nsp_loss, mlm_logits=mlm_logits,
                       nsp_logits=out.seq_relationship_logits)
    else:
        out = model(**inputs, output_attentions=True)
        loss = out.loss
        outputs = dict(loss=loss)
        if entry["name"] == "bert_for_question_answering":
            outputs.update(start_logits=out.start_logits, end_logits=out.end_logits)
        else:
            outputs["logits"] = out.logits
    for i, probs in enumerate(out.attentions):
        probs.retain_grad()
        captured[f"bert.encoder.layer.{i}.attention.self.probs"] = probs
    loss.backward()

    results = {k: v.detach().numpy() for k, v in outputs.items()}
    named = dict(model.named_parameters())
    for k in params:
        p = named.get(k)
        results["grad/" + k] = np.zeros_like(params[k]) if p is None or p.grad is None else p.grad.numpy()
    for name, t in captured.items():
        value, grad = t.detach(), t.grad
        if name.startswith("cls.predictions."):     # every position: the golden has the masked ones
            value = value.reshape(-1, value.shape[-1])[positions]
            grad = None
        if name == "bert.embeddings.position_embeddings":
            value, grad = value[0], None if grad is None else grad.sum(0)   # (1, T, H) broadcast over the batch
        results[name] = value.numpy()
        if grad is not None and "grad/" + name in roles:
            results["grad/" + name] = grad.numpy()
    if "cls.predictions.logits" in wanted:                  # the decoder's output at the masked positions
        results["cls.predictions.logits"] = results["mlm_logits"]
    return {k: np.ascontiguousarray(v).reshape(np.shape(v)) for k, v in results.items() if k in roles}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("golden")
    parser.add_argument("results")
    args = parser.parse_args()
    manifest = json.load(open(os.path.join(args.golden, "manifest.json")))
    torch.manual_seed(0)
    for entry in manifest["cases"]:
        if entry["name"] in CLASSES:
            results = run_case(manifest, args.golden, entry)
            path = os.path.join(args.results, entry["file"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            save_file(results, path)
            print(f"{entry['dtype']}/{entry['name']}: {len(results)} tensors")


if __name__ == "__main__":
    main()
