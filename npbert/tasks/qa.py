"""Extractive QA as the original BERT run_squad.py does it, with answers mapped back through
the tokenizer's character offsets (as Hugging Face's run_qa.py):

  windows   the question (at most max_query_length tokens) and a window of the context:
            [CLS] question [SEP] context[start : start + length] [SEP]; windows start every
            doc_stride tokens until one reaches the end of the context: the tokenizer's
            overflowing windows (return_overflowing_tokens) with stride = length - doc_stride
            tokens shared between consecutive windows (Hugging Face's run_qa.py passes its own
            doc_stride as that overlap instead).
  labels    the answer's first and last context tokens, if the window holds the whole answer;
            otherwise 0, 0 (the [CLS] token), as run_squad.py.
  max context  a token in several windows is scored only in the window where it has the most
            context: the largest min(tokens left of it, tokens right of it) + 0.01 * length.
  decoding  per question, over all its windows: the n_best_size best start and end logits,
            pairs with start <= end, at most max_answer_length tokens, inside the context and
            starting at a max-context token, ranked by start + end logit. The answer is the
            context's own text from the first token's start offset to the last token's end.
"""
from __future__ import annotations

import numpy as np

from npbert.errors import DataError
from npbert.option_declaration import POSITIVE, Option, options_record
from npbert.tokenizer.truncation import windows as overflow_windows

MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST_SIZE, MAX_ANSWER_LENGTH = 384, 128, 64, 20, 30

QA_OPTIONS = (                                   # options of `npbert finetune` (and evaluate's record of them)
    Option("doc_stride", DOC_STRIDE, "QA: tokens between window starts", POSITIVE),
    Option("max_query_length", MAX_QUERY_LENGTH, "QA: question tokens kept", POSITIVE),
    Option("n_best_size", N_BEST_SIZE, "QA: start/end candidates", POSITIVE),
    Option("max_answer_length", MAX_ANSWER_LENGTH, "QA: longest answer in tokens", POSITIVE),
)
QAOptions = options_record("QAOptions", QA_OPTIONS, __name__)


def windows(num_tokens, max_tokens, doc_stride) -> list:
    """[(start, length)] of the context windows (run_squad.py's doc_spans): the tokenizer's overflowing
    windows of max_tokens that share max_tokens - doc_stride tokens (none when doc_stride >= max_tokens)."""
    spans = overflow_windows(num_tokens, max_tokens, max(0, max_tokens - doc_stride))
    return [(start, stop - start) for start, stop in spans]


def max_context(spans, span_index, position) -> bool:
    """Is context token `position` best placed (most context on both sides) in spans[span_index]?"""
    best, best_score = None, None
    for i, (start, length) in enumerate(spans):
        if not start <= position < start + length:
            continue
        score = min(position - start, start + length - 1 - position) + 0.01 * length
        if best_score is None or score > best_score:
            best, best_score = i, score
    return best == span_index


def answer_tokens(example, offsets) -> tuple:
    """The first and last context token overlapping the (first) answer's characters."""
    answer = example["answers"][0]
    s, e = answer["answer_start"], answer["answer_start"] + len(answer["text"])
    inside = [i for i, (a, b) in enumerate(offsets) if a < e and b > s]
    if not inside:
        raise DataError(f"{example['where']}: the answer {answer['text']!r} covers no token of the context")
    return inside[0], inside[-1]


def qa_features(examples, tokenizer, max_seq_length=MAX_SEQ_LENGTH, doc_stride=DOC_STRIDE,
                max_query_length=MAX_QUERY_LENGTH) -> tuple:
    """-> (features, contexts): one feature per window; contexts[i] = (offsets of example i's
    context tokens), for decoding. Features of examples with answers carry start/end positions."""
    features, contexts = [], []
    for e, ex in enumerate(examples):
        query = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(ex["question"]))[:max_query_length]
        doc = tokenizer.tokenize_with_offsets(ex["context"])
        contexts.append(doc.offsets)
        max_tokens = max_seq_length - len(query) - 3                      # [CLS] q [SEP] ... [SEP]
        if max_tokens < 1:
            raise DataError(f"max_seq_length {max_seq_length} leaves no room for the context after a "
                            f"{len(query)}-token question; raise it or lower max_query_length")
        doc_ids = tokenizer.convert_tokens_to_ids(doc.tokens)
        answer = answer_tokens(ex, doc.offsets) if ex.get("answers") else None
        spans = windows(len(doc_ids), max_tokens, doc_stride)
        offset = len(query) + 2                                           # where the context starts
        for s, (start, length) in enumerate(spans):
            ids = [tokenizer.cls_token_id] + query + [tokenizer.sep_token_id] + \
                doc_ids[start:start + length] + [tokenizer.sep_token_id]
            f = dict(input_ids=ids, token_type_ids=[0] * offset + [1] * (length + 1), example=e,
                     context_offset=offset, doc_start=start, max_context=[max_context(spans, s, start + i)
                                                                           for i in range(length)])
            if answer is not None:
                inside = start <= answer[0] and answer[1] < start + length
                f["start_positions"] = answer[0] - start + offset if inside else 0
                f["end_positions"] = answer[1] - start + offset if inside else 0
            features.append(f)
    return features, contexts


def decode_answers(examples, features, contexts, start_logits, end_logits, n_best_size=N_BEST_SIZE,
                   max_answer_length=MAX_ANSWER_LENGTH) -> list:
    """-> per example {"text", "probability", "n_best": [(text, probability), ...]}; start_logits[i]
    and end_logits[i] are feature i's logits (at least as long as its input_ids)."""
    candidates = [[] for _ in examples]                                   # (score, char start, char end)
    for f, start, end in zip(features, start_logits, end_logits):
        offsets, o, length = contexts[f["example"]], f["context_offset"], len(f["max_context"])
        start, end = np.asarray(start)[o:o + length], np.asarray(end)[o:o + length]   # context part only
        for i in np.argsort(-start, kind="stable")[:n_best_size]:
            if not f["max_context"][i]:
                continue
            for j in np.argsort(-end, kind="stable")[:n_best_size]:
                if i <= j < i + max_answer_length:
                    a, b = offsets[f["doc_start"] + i][0], offsets[f["doc_start"] + j][1]
                    candidates[f["example"]].append((float(start[i] + end[j]), a, b))
    out = []
    for ex, cands in zip(examples, candidates):
        best = sorted(cands, key=lambda c: -c[0])[:n_best_size]
        if not best:
            out.append(dict(text="", probability=0.0, n_best=[]))
            continue
        scores = np.array([c[0] for c in best])
        p = np.exp(scores - scores.max())
        p /= p.sum()
        n_best = [(ex["context"][a:b], float(q)) for (_, a, b), q in zip(best, p)]
        out.append(dict(text=n_best[0][0], probability=n_best[0][1], n_best=n_best))
    return out
