"""Pictures are optional: matplotlib is the `npbert[plot]` extra, never a dependency. Whatever
draws asks `load_pyplot()` first and, given None, prints MISSING_NOTE and keeps its text output."""
from __future__ import annotations

MISSING_NOTE = "matplotlib is not installed (pip install 'npbert[plot]'): no pictures, text output only"


def load_pyplot():
    """matplotlib.pyplot on the file-only Agg backend (no screen needed), or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
