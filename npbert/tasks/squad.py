"""SQuAD v1.1 JSON: {"data": [{"paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}]}]}]}]}. Every field is checked to be there with its JSON
type, and every answer to be at its answer_start in the context; the error names the file,
the line of the question's id, and the question. SQuAD 2.0's unanswerable questions are refused."""
from __future__ import annotations

import json

from npbert.errors import JSON_ERRORS, DataError
from npbert.tasks.files import JSON_KINDS, json_kind, read_lines

REQUIRED = object()   # member()'s default: the key must be there


def read_squad(path, require_answers=True) -> list:
    raw = "\n".join(read_lines(path))
    try:
        top = json.loads(raw)
    except JSON_ERRORS as e:
        raise DataError(f"{path}: not SQuAD JSON (an object with a \"data\" list): {e}") from None
    records = []
    for i, article in enumerate(member(top, "data", list, str(path))):
        for j, paragraph in enumerate(member(article, "paragraphs", list, f"{path} (data[{i}])")):
            context = member(paragraph, "context", str, f"{path} (data[{i}].paragraphs[{j}])")
            for k, qa in enumerate(member(paragraph, "qas", list, f"{path} (data[{i}].paragraphs[{j}])")):
                json_path = f"data[{i}].paragraphs[{j}].qas[{k}]"
                qid = member(qa, "id", (str, int), f"{path} ({json_path})")
                at = locate(path, raw, qid, json_path)
                question = member(qa, "question", str, at)
                if qa.get("is_impossible"):
                    raise DataError(f"{at}: an unanswerable (SQuAD 2.0) question; npbert reads SQuAD v1.1")
                answers = [dict(text=member(a, "text", str, at), answer_start=member(a, "answer_start", int, at))
                           for a in member(qa, "answers", list, at, default=[])]
                if require_answers and not answers:
                    raise DataError(f"{at}: question {qid!r} has no answers")
                for a in answers:
                    check_answer(context, a, at, qid)
                records.append(dict(id=str(qid), question=question, context=context, answers=answers, where=at))
    return records


def member(obj, key, types, at, default=REQUIRED):
    """obj[key], checked to be a JSON object's member of the given type(s) (true/false are not integers)."""
    if not isinstance(obj, dict):
        raise DataError(f"{at}: not SQuAD v1.1 JSON: expected an object with \"{key}\", found {json_kind(obj)}")
    value = obj.get(key, default)
    if value is REQUIRED:
        raise DataError(f"{at}: not SQuAD v1.1 JSON: no \"{key}\"")
    if not isinstance(value, types) or isinstance(value, bool):
        names = " or ".join(JSON_KINDS[t] for t in (types if isinstance(types, tuple) else (types,)))
        raise DataError(f"{at}: not SQuAD v1.1 JSON: \"{key}\" must be {names}, found {json_kind(value)}")
    return value


def check_answer(context, answer, at, qid):
    start, text = answer["answer_start"], answer["text"]
    found = context[start:start + len(text)]
    if start < 0 or found != text or not text.strip():
        raise DataError(f"{at}: question {qid!r}: the answer {text!r} is not at answer_start {start} of its "
                        f"context (the context has {found!r} there)")


def locate(path, raw, qid, json_path) -> str:
    """'file:line (json path)', the line being that of the question's "id" (best effort)."""
    pos = raw.find(json.dumps(qid))
    line = f":{raw.count(chr(10), 0, pos) + 1}" if pos >= 0 else ""
    return f"{path}{line} ({json_path})"
