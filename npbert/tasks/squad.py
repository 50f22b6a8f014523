"""SQuAD v1.1 JSON: {"data": [{"paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}]}]}]}]}. Every answer is checked to be at its
answer_start in the context; the error names the file, the line of the question's id, and
the question. SQuAD 2.0's unanswerable questions are refused."""
from __future__ import annotations

import json

from npbert.errors import DataError
from npbert.tasks.files import read_lines


def read_squad(path, require_answers=True) -> list:
    raw = "\n".join(read_lines(path))
    try:
        data = json.loads(raw)["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not SQuAD JSON (an object with a \"data\" list): {e}") from None
    records = []
    try:
        for i, article in enumerate(data):
            for j, paragraph in enumerate(article["paragraphs"]):
                context = paragraph["context"]
                for k, qa in enumerate(paragraph["qas"]):
                    at = locate(path, raw, qa.get("id"), f"data[{i}].paragraphs[{j}].qas[{k}]")
                    if qa.get("is_impossible"):
                        raise DataError(f"{at}: an unanswerable (SQuAD 2.0) question; npbert reads SQuAD v1.1")
                    answers = [dict(text=a["text"], answer_start=int(a["answer_start"])) for a in qa.get("answers", [])]
                    if require_answers and not answers:
                        raise DataError(f"{at}: question {qa['id']!r} has no answers")
                    for a in answers:
                        check_answer(context, a, at, qa["id"])
                    records.append(dict(id=str(qa["id"]), question=qa["question"], context=context,
                                        answers=answers, where=at))
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, DataError):
            raise
        raise DataError(f"{path}: not SQuAD v1.1 JSON ({type(e).__name__}: {e})") from None
    return records


def check_answer(context, answer, at, qid):
    start, text = answer["answer_start"], answer["text"]
    found = context[start:start + len(text)]
    if start < 0 or found != text or not text.strip():
        raise DataError(f"{at}: question {qid!r}: the answer {text!r} is not at answer_start {start} of its "
                        f"context (the context has {found!r} there)")


def locate(path, raw, qid, json_path) -> str:
    """'file:line (json path)', the line being that of the question's "id" (best effort)."""
    pos = raw.find(json.dumps(qid)) if qid is not None else -1
    line = f":{raw.count(chr(10), 0, pos) + 1}" if pos >= 0 else ""
    return f"{path}{line} ({json_path})"
