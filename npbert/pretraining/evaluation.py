"""Pretraining's metrics: MLM and NSP accuracy on a batch and on the held-out split, and the
baseline each is measured against (the token masked most often in training; the majority NSP
class)."""
from __future__ import annotations

import numpy as np

from npbert.inference import pretraining_inference
from npbert.ops import IGNORE_INDEX


def keep_nsp(metrics: dict, nsp: bool) -> dict:
    """metrics, less the NSP ones when NSP is off (an untrained head's accuracy means nothing)."""
    return metrics if nsp else {k: v for k, v in metrics.items() if not k.startswith("nsp_")}


def step_metrics(out) -> dict:
    mlm_hits, mlm_n = accuracy_counts(out["mlm_predictions"], out["mlm_labels"])
    nsp_hits, nsp_n = accuracy_counts(out["nsp_logits"].argmax(axis=-1), out["nsp_labels"])
    return dict(loss=float(out["loss"]), mlm_loss=float(out["mlm_loss"]), nsp_loss=float(out["nsp_loss"]),
                mlm_acc=mlm_hits / max(mlm_n, 1), nsp_acc=nsp_hits / max(nsp_n, 1))


def accuracy_counts(predictions, labels):
    """(correct, counted) of the predictions (ids) over the labels that are not IGNORE_INDEX."""
    counted = labels != IGNORE_INDEX
    return int((predictions[counted] == labels[counted]).sum()), int(counted.sum())


def evaluate(params, config, data, batch_size, max_batches=None, nsp=True, forward=pretraining_inference) -> dict:
    """Held-out MLM and NSP loss and accuracy (nsp=False: MLM only), over a fixed order of
    batches, on the inference path (packed, no dropout, no caches). forward(params, config,
    **batch) -> outputs: another path to compare with (benchmarks/eval_speed.py)."""
    totals = dict(mlm_loss=0.0, nsp_loss=0.0, mlm_hits=0, mlm_n=0, nsp_hits=0, nsp_n=0)
    for i, batch in enumerate(data.batches(batch_size, seed=0, epoch=0)):
        if max_batches is not None and i >= max_batches:
            break
        out = forward(params, config, **batch)
        mh, mn = accuracy_counts(out["mlm_predictions"], out["mlm_labels"])
        nh, nn = accuracy_counts(out["nsp_logits"].argmax(axis=-1), out["nsp_labels"])
        totals["mlm_loss"] += float(out["mlm_loss"]) * mn
        totals["nsp_loss"] += float(out["nsp_loss"]) * nn
        for k, v in (("mlm_hits", mh), ("mlm_n", mn), ("nsp_hits", nh), ("nsp_n", nn)):
            totals[k] += v
    return keep_nsp(dict(mlm_loss=totals["mlm_loss"] / max(totals["mlm_n"], 1),
                         nsp_loss=totals["nsp_loss"] / max(totals["nsp_n"], 1),
                         mlm_acc=totals["mlm_hits"] / max(totals["mlm_n"], 1),
                         nsp_acc=totals["nsp_hits"] / max(totals["nsp_n"], 1)), nsp)


def masked_labels(data) -> np.ndarray:
    a = data.arrays
    predicted = np.arange(a["masked_lm_ids"].shape[1])[None, :] < a["num_masked"][:, None]  # (n, P)
    return a["masked_lm_ids"][predicted]                                                    # (N,)


def most_frequent_token_accuracy(train_data, heldout_data) -> float:
    """Chance baseline for MLM: always predict the token masked most often in training."""
    mode = np.bincount(masked_labels(train_data)).argmax()
    return float((masked_labels(heldout_data) == mode).mean())
