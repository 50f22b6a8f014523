"""What goes around the model for each kind of head: examples -> features (encode), the
model's outputs -> one prediction per example (decode), predictions -> metrics (score)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from npbert import metrics as m
from npbert.tasks import qa
from npbert.tasks.encoding import encode_choices, encode_sequences, encode_tags


@dataclass
class QAOptions:
    doc_stride: int = qa.DOC_STRIDE
    max_query_length: int = qa.MAX_QUERY_LENGTH
    n_best_size: int = qa.N_BEST_SIZE
    max_answer_length: int = qa.MAX_ANSWER_LENGTH


@dataclass
class Encoded:
    features: list
    contexts: list = field(default_factory=list)   # QA: each example's context token offsets


def encode(task, examples, tokenizer, max_seq_length, labels, qa_options=None) -> Encoded:
    if task.kind == "sequence_classification":
        return Encoded(encode_sequences(examples, tokenizer, max_seq_length, labels, task.regression))
    if task.kind == "token_classification":
        return Encoded(encode_tags(examples, tokenizer, max_seq_length, labels))
    if task.kind == "multiple_choice":
        return Encoded(encode_choices(examples, tokenizer, max_seq_length))
    o = qa_options or QAOptions()
    return Encoded(*qa.qa_features(examples, tokenizer, max_seq_length, o.doc_stride, o.max_query_length))


def decode(task, examples, encoded, outputs, labels, qa_options=None) -> list:
    """outputs[i]: feature i's outputs, without padding: logits (K,) or (C,) for a sequence or
    a choice, (T, K) for tags, (start (T,), end (T,)) for QA.
    -> a label name, a number (regression), a list of tags, an answer dict, or a choice index."""
    if task.kind == "sequence_classification":
        if task.regression:
            return [float(o[0]) for o in outputs]
        return [labels[int(np.argmax(o))] for o in outputs]
    if task.kind == "multiple_choice":
        return [int(np.argmax(o)) for o in outputs]
    if task.kind == "token_classification":
        return [[labels[int(np.argmax(o[s]))] if s >= 0 else "O" for s in f["word_starts"]]
                for f, o in zip(encoded.features, outputs)]
    o = qa_options or QAOptions()
    return qa.decode_answers(examples, encoded.features, encoded.contexts, [s for s, _ in outputs],
                             [e for _, e in outputs], o.n_best_size, o.max_answer_length)


def gold(task, examples) -> list:
    if task.kind == "token_classification":
        return [ex["tags"] for ex in examples]
    if task.kind == "question_answering":
        return [[a["text"] for a in ex["answers"]] for ex in examples]
    if task.regression:
        return [float(ex["label"]) for ex in examples]
    return [ex["label"] if task.kind == "multiple_choice" else str(ex["label"]) for ex in examples]


def has_gold(task, examples) -> bool:
    key = dict(token_classification="tags", question_answering="answers").get(task.kind, "label")
    return all(ex.get(key) not in (None, []) for ex in examples)


def score(task, examples, predictions, labels=None) -> dict:
    """The task's metrics (task.metrics first), as fractions."""
    y = gold(task, examples)
    if task.kind == "token_classification":
        s = m.entity_scores(y, predictions)
        return dict(entity_f1=s["f1"], precision=s["precision"], recall=s["recall"], token_accuracy=s["token_accuracy"])
    if task.kind == "question_answering":
        return m.squad_scores([p["text"] for p in predictions], y)
    if task.regression:
        return dict(spearman=m.spearman(predictions, y), pearson=m.pearson(predictions, y))
    out = dict(accuracy=m.accuracy(y, predictions))
    if "f1" in task.metrics:                       # binary F1 of the positive class (labels[1]), as GLUE
        out["f1"] = m.f1(y, predictions, positive=labels[1])
    if "macro_f1" in task.metrics:
        out["macro_f1"] = m.macro_f1(y, predictions)
    if "mcc" in task.metrics:
        out["mcc"] = m.matthews_corrcoef(y, predictions)
    return out


def majority_baseline(task, train_examples, dev_examples, labels=None) -> dict:
    """The task's metrics on dev for a model that ignores its input and always gives the most
    frequent training answer (label, tag for every word, choice, answer text; the mean for
    regression, whose correlations are then 0): the bar fine-tuning has to clear."""
    answers = gold(task, train_examples)
    if task.regression:
        guess = float(np.mean(answers))
    elif task.kind == "token_classification":
        guess = Counter(tag for tags in answers for tag in tags).most_common(1)[0][0]
    elif task.kind == "question_answering":
        guess = {"text": Counter(texts[0] for texts in answers).most_common(1)[0][0]}
    else:
        guess = Counter(answers).most_common(1)[0][0]
    if task.kind == "token_classification":
        predictions = [[guess] * len(ex["tags"]) for ex in dev_examples]
    else:
        predictions = [guess] * len(dev_examples)
    return score(task, dev_examples, predictions, labels)
