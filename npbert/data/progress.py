"""Progress through a long stage of a preparation (reading, training a vocabulary, tokenizing,
writing shards): a line at most every EVERY_SECONDS, so that a minute of work is never silent,
and no line at all for a stage that ends sooner."""
from __future__ import annotations

import time

EVERY_SECONDS = 2.0


class Progress:
    """say('  tokenizing: 5,000 of 25,000 documents (1,234/s)') at most every `every` seconds
    as update(done) is called; total None when it is not known in advance."""

    def __init__(self, say, what: str, unit: str = "documents", total: int | None = None,
                 every: float | None = None, clock=time.perf_counter):
        self.say, self.what, self.unit, self.total, self.clock = say, what, unit, total, clock
        self.every = EVERY_SECONDS if every is None else every
        self.start = self.last = clock()

    def update(self, done: int) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        of = f" of {self.total:,}" if self.total is not None else ""
        rate = done / max(now - self.start, 1e-9)
        per = f"{rate:,.0f}/s" if rate >= 10 else f"{1 / rate:.1f} s each" if rate > 0 else "none yet"
        self.say(f"  {self.what}: {done:,}{of} {self.unit} ({per})")

    def over(self, items):
        """Yield items unchanged, updating after each one is consumed."""
        for done, item in enumerate(items, 1):
            yield item
            self.update(done)
