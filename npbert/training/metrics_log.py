"""metrics.jsonl: one JSON object per line (kind "train", "eval", "test"), appended as a run
goes; `pandas.read_json(path, lines=True)` reads it for plotting."""
from __future__ import annotations

import json
import os

from npbert.atomic import atomic_write


class MetricsLog:
    def __init__(self, path, keep_until_step=None):
        """keep_until_step: on resume, drop the records written after the checkpoint's step, so
        the log reads as one uninterrupted run; None starts a new log."""
        self.path = path
        if keep_until_step is None:
            if os.path.exists(path):
                os.remove(path)
            return
        if os.path.exists(path):
            keep = [line for line in _records(path) if json.loads(line).get("step", 0) <= keep_until_step]
            atomic_write(path, lambda f: f.write("".join(keep).encode("utf-8")))

    def write(self, **record) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _records(path) -> list:
    """The complete lines of the log: a kill in the middle of a write leaves a partial last line."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                json.loads(line)
            except ValueError:
                continue
            lines.append(line if line.endswith("\n") else line + "\n")
    return lines
