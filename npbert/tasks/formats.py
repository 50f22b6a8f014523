"""The shapes of a task's examples and what the code around the model does with them, one class
each (google-research/bert's DataProcessor, with the post-processing that belongs to it). A Task
(registry.py) holds one of these and its head (npbert/heads/: the layers, the loss, the Hugging
Face names); the head never sees an example.

    SENTENCES   {"text", "text_pair", "label"}                     a label per sequence or pair
    SCORES      the same, a number as the label                    regression (one output, MSE)
    TAGS        {"words", "tags"}                                  a tag per word
    SPANS       {"id", "question", "context", "answers"}           an answer span in the context
    CHOICES     {"context", "endings", "label"}                    which ending continues

Each says how examples become features (encode) and the model's outputs predictions (decode),
the gold answers and their metrics (score, the task's first metric first), the majority guess a
run must beat (baseline), the label names and what the head's outputs are. Whether a checkpoint
fits a task is checkpoint_fit.py's; the lines `npbert predict` reads and prints are
npbert/commands/predict_lines.py's.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from npbert import metrics as m
from npbert.errors import DataError
from npbert.tasks import qa
from npbert.tasks.encoding import Encoded, encode_choices, encode_sequences, encode_tags

REGRESSION_LABELS = ["LABEL_0"]          # Hugging Face's name for the one output of a regression head


class Format:
    about = ""                           # what its tasks are, for messages ("a token classification task")
    gold_key = "label"                   # the example field that holds the answer
    outputs_about = None                 # what the head's outputs are when they have no names ("regression")
    named_outputs = False                # a fine-tuned checkpoint names each output (config.json's id2label)
    regression = None                    # a sequence task: True regression, False classification (problem_type)

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        raise NotImplementedError

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """The model's outputs (one per feature, without padding) -> one prediction per example."""
        raise NotImplementedError

    def gold(self, examples) -> list:
        """The gold answers, in the predictions' form."""
        raise NotImplementedError

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        raise NotImplementedError

    def baseline(self, train_examples, dev_examples) -> list:
        """The most frequent training answer, as a prediction for every dev example."""
        raise NotImplementedError

    def label_names(self, train_examples) -> list | None:
        """Names of the outputs taken from the training examples, or None."""
        return None

    def num_labels(self, labels) -> int:
        return len(labels) if labels else 2

    def saved_names(self, labels):
        """The output names a fine-tuned checkpoint records (config.json's id2label)."""
        return labels

    def has_gold(self, examples) -> bool:
        return all(ex.get(self.gold_key) not in (None, []) for ex in examples)


class Sentences(Format):
    about, named_outputs, regression = "sequence classification", True, False

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        return Encoded(encode_sequences(examples, tokenizer, max_seq_length, labels))

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """logits (K,) per example -> a label name."""
        return [labels[int(np.argmax(o))] for o in outputs]

    def gold(self, examples) -> list:
        return [str(ex["label"]) for ex in examples]

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        y = self.gold(examples)
        out = dict(accuracy=m.accuracy(y, predictions))
        if "f1" in metrics:                            # binary F1 of the positive class (labels[1]), as GLUE
            out["f1"] = m.f1(y, predictions, positive=labels[1])
        if "macro_f1" in metrics:
            out["macro_f1"] = m.macro_f1(y, predictions)
        if "mcc" in metrics:
            out["mcc"] = m.matthews_corrcoef(y, predictions)
        return out

    def baseline(self, train_examples, dev_examples) -> list:
        return [most_common(self.gold(train_examples))] * len(dev_examples)

    def label_names(self, train_examples) -> list:
        """The training examples' labels, numbers in numeric order."""
        seen = {str(ex["label"]) for ex in train_examples if ex.get("label") is not None}
        if not seen:
            raise DataError(f"{train_examples[0]['where']}: the training examples have no labels")
        try:
            return sorted(seen, key=lambda s: (int(s), s))   # "2" before "10"; equal numbers ("1", "01") by text
        except ValueError:                                   # not all integers
            return sorted(seen)


class Scores(Sentences):
    """Sentences (or pairs) with a number as the label: the sequence head with one output, whose
    loss is then MSE (Hugging Face's problem_type "regression")."""
    about, outputs_about = "regression", "regression"
    named_outputs, regression = False, True

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        return Encoded(encode_sequences(examples, tokenizer, max_seq_length, labels, regression=True))

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """logits (1,) per example -> a number."""
        return [float(o[0]) for o in outputs]

    def gold(self, examples) -> list:
        return [float(ex["label"]) for ex in examples]

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        y = self.gold(examples)
        return dict(spearman=m.spearman(predictions, y), pearson=m.pearson(predictions, y))

    def baseline(self, train_examples, dev_examples) -> list:
        """The mean training label (whose correlations are then 0)."""
        return [float(np.mean(self.gold(train_examples)))] * len(dev_examples)

    def label_names(self, train_examples) -> None:
        return None

    def num_labels(self, labels) -> int:
        return 1

    def saved_names(self, labels) -> list:
        return REGRESSION_LABELS


class Tags(Format):
    about, gold_key, named_outputs = "token classification", "tags", True

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        return Encoded(encode_tags(examples, tokenizer, max_seq_length, labels))

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """logits (T, K) per example -> a tag per word, read at its first piece ("O" past the window)."""
        return [[labels[int(np.argmax(o[s]))] if s >= 0 else "O" for s in f["word_starts"]]
                for f, o in zip(encoded.features, outputs)]

    def gold(self, examples) -> list:
        return [ex["tags"] for ex in examples]

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        s = m.entity_scores(self.gold(examples), predictions)
        return dict(entity_f1=s["f1"], precision=s["precision"], recall=s["recall"], token_accuracy=s["token_accuracy"])

    def baseline(self, train_examples, dev_examples) -> list:
        """The most frequent training tag, for every word."""
        guess = most_common(tag for tags in self.gold(train_examples) for tag in tags)
        return [[guess] * len(ex["tags"]) for ex in dev_examples]

    def label_names(self, train_examples) -> list:
        """The training examples' tags, "O" first."""
        seen = {t for ex in train_examples for t in (ex["tags"] or [])}
        return (["O"] if "O" in seen else []) + sorted(seen - {"O"})


class Spans(Format):
    """SQuAD v1.1 questions, read in windows of the context (qa.py); the answer is the best span
    over the windows."""
    about, gold_key = "question answering", "answers"

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        """Each example -> one feature per window of its context (a long context has several)."""
        o = options or qa.QAOptions()
        return Encoded(*qa.qa_features(examples, tokenizer, max_seq_length, o.doc_stride, o.max_query_length))

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """(start (T,), end (T,)) per window -> each example's best answer {"text", "probability", ...}."""
        o = options or qa.QAOptions()
        return qa.decode_answers(examples, encoded.features, encoded.contexts, [s for s, _ in outputs],
                                 [e for _, e in outputs], o.n_best_size, o.max_answer_length)

    def gold(self, examples) -> list:
        return [[a["text"] for a in ex["answers"]] for ex in examples]

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        return m.squad_scores([p["text"] for p in predictions], self.gold(examples))

    def baseline(self, train_examples, dev_examples) -> list:
        """The most frequent training answer text, for every question."""
        return [{"text": most_common(texts[0] for texts in self.gold(train_examples))}] * len(dev_examples)


class Choices(Format):
    about = "multiple choice"

    def encode(self, examples, tokenizer, max_seq_length, labels, options=None) -> Encoded:
        return Encoded(encode_choices(examples, tokenizer, max_seq_length))

    def decode(self, examples, encoded, outputs, labels, options=None) -> list:
        """logits (C,) per example -> the index of the chosen ending."""
        return [int(np.argmax(o)) for o in outputs]

    def gold(self, examples) -> list:
        return [ex["label"] for ex in examples]

    def score(self, examples, predictions, labels=None, metrics=()) -> dict:
        return dict(accuracy=m.accuracy(self.gold(examples), predictions))

    def baseline(self, train_examples, dev_examples) -> list:
        """The ending most often right in training, for every example."""
        return [most_common(self.gold(train_examples))] * len(dev_examples)


SENTENCES, SCORES, TAGS, SPANS, CHOICES = Sentences(), Scores(), Tags(), Spans(), Choices()


def most_common(values):
    """The most frequent value (the first seen among equals: Counter's order)."""
    return Counter(values).most_common(1)[0][0]
