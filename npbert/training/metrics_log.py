"""metrics.jsonl: one JSON object per line, appended as a run goes: kind "baseline" (step 0, what
a model that ignores its input scores on the held-out or dev set), "train" (every log_every
steps), "eval" (held-out or dev), "test". `npbert plot RUN_DIR` draws it (npbert/run_plot.py);
`pandas.read_json(path, lines=True)` reads it too."""
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
