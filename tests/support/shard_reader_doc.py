"""The NumPy-only shard reader of docs/data.md ("Reading it without npbert"), taken from the page
itself, so that what is tested and what is run is what a reader copies: tests/data/test_shards.py
holds it to npbert's own reader, and tests/reference/continue_with_torch.py reads its data with it."""
import os
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "data.md")
HEADING = "### Reading it without npbert"


def reader_code() -> str:
    """The first ```python block after HEADING in docs/data.md."""
    page = open(DOC, encoding="utf-8").read()
    return re.search(r"```python\n(.*?)```", page[page.index(HEADING):], flags=re.S).group(1)


def load_reader() -> dict:
    """The block run in a namespace of its own -> its functions by name (read_split, epoch_order, model_inputs)."""
    namespace = {}
    exec(compile(reader_code(), DOC, "exec"), namespace)
    return namespace
