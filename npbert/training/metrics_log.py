"""metrics.jsonl: one JSON object per line, appended as a run goes: kind "baseline" (step 0, what
a model that ignores its input scores on the held-out or dev set), "train" (every log_every
steps), "eval" (held-out or dev, during the run), and at the end "final" (pretraining: the whole
held-out set) or "test" (fine-tuning's --test). `npbert plot RUN_DIR` draws it (npbert/run_plot.py);
`pandas.read_json(path, lines=True)` reads it too."""
from __future__ import annotations

import json
import os

from npbert.atomic import atomic_write
from npbert.errors import NpbertError

FINAL_KINDS = ("final", "test")                        # written once a run has finished


class MetricsLog:
    def __init__(self, path, keep_until_step=None, drop_kinds=()):
        """keep_until_step: on resume, drop the records written after the checkpoint's step (and
        those of drop_kinds: a finished run resumed writes its final records again, not twice),
        so the log reads as one uninterrupted run; None starts a new log."""
        self.path = path
        if keep_until_step is None:
            if os.path.exists(path):
                os.remove(path)
            return
        if os.path.exists(path):
            keep = [line for line, r in _records(path) if r["step"] <= keep_until_step and r["kind"] not in drop_kinds]
            atomic_write(path, lambda f: f.write("".join(keep).encode("utf-8")))

    def write(self, **record) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _records(path) -> list:
    """[(line, record)] of the log's complete lines (a kill in the middle of a write leaves a
    partial last line, passed over); a line that is JSON but not a record is refused rather than
    rewritten away."""
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not (isinstance(record, dict) and isinstance(record.get("kind"), str)
                    and isinstance(record.get("step", 0), int) and not isinstance(record.get("step"), bool)):
                raise NpbertError(f"{path} line {number} is not a metrics record ({line.strip()[:60]}): npbert will "
                                  "not rewrite a log it cannot read; move it aside to resume")
            record.setdefault("step", 0)
            found.append((line if line.endswith("\n") else line + "\n", record))
    return found
