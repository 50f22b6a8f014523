"""Exercise 04 - GELU.

Write gelu_forward and gelu_backward (the exact form), then run the last cell: `check` runs your
code through npbert's golden vectors and central finite differences, and says what is wrong first
(which tensor, along which axis, the likely cause). The solution is npbert's own:
show_solution("gelu").

    python demos/exercises/04_gelu.py
    python demos/notebooks.py exercises/04_gelu      (writes the notebook: demos/exercises/04_gelu.ipynb)
"""

# %% [markdown]
# > from docs/layers/gelu.md: Forward
# > from docs/layers/gelu.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def gelu_forward(x, hidden_act="gelu"):
    # x: (...) -> y: (...), and a cache; hidden_act "gelu" is the exact form, x Phi(x)
    # (erf: from npbert.ops.erf import erf, or math.erf elementwise)
    raise NotImplementedError("your code here")


def gelu_backward(dy, cache):
    # dy: (...) -> dx: (...)
    raise NotImplementedError("your code here")


# %%
check("gelu", gelu_forward, gelu_backward)
