"""What every demo shares: run against this checkout's npbert, and print each check as it passes."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # use this checkout's npbert

import numpy as np  # noqa: E402

np.set_printoptions(precision=4, suppress=True)


def ok(condition, what):
    """Assert a property of the layer and say so: a demo that finishes has checked itself."""
    assert condition, what
    print(f"   ok  {what}")
