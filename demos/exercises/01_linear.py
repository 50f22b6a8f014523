"""Exercise 01 - the linear layer.

Write linear_forward and linear_backward, then run the last cell: `check` runs your code through
npbert's golden vectors and central finite differences, and says what is wrong first (which tensor,
along which axis, the likely cause). The golden problem is x (3, 7, 10), w (13, 10), b (13,): every
size different, so a transpose shows. The solution is npbert's own: show_solution("linear").

    python demos/exercises/01_linear.py
    python demos/notebooks.py exercises/01_linear      (writes the notebook: demos/exercises/01_linear.ipynb)
"""

# %% [markdown]
# > from docs/layers/linear.md: Forward
# > from docs/layers/linear.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def linear_forward(x, w, b):
    # x: (..., in), w: (out, in) (Hugging Face's layout), b: (out,) -> y: (..., out), and a cache
    raise NotImplementedError("your code here")


def linear_backward(dy, cache):
    # dy: (..., out) -> dx: (..., in), dw: (out, in), db: (out,)
    raise NotImplementedError("your code here")


# %%
check("linear", linear_forward, linear_backward)
