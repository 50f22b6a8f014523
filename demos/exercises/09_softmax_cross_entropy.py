"""Exercise 09 - softmax and cross-entropy.

Write the softmax and the cross-entropy, forward and backward, then run the last cell: `check` runs
your code through npbert's golden vectors and central finite differences, and says what is wrong
first (which tensor, along which axis, the likely cause). Both are tried on scores of 1000 too,
where an exp without the row's maximum subtracted overflows. The solution is npbert's own:
show_solution("softmax").

    python demos/exercises/09_softmax_cross_entropy.py
    python demos/notebooks.py exercises/09_softmax_cross_entropy      (writes the notebook: demos/exercises/09_softmax_cross_entropy.ipynb)
"""

# %% [markdown]
# > from docs/layers/softmax.md: Forward
# > from docs/layers/softmax.md: Backward
# > from docs/layers/cross_entropy.md: Forward
# > from docs/layers/cross_entropy.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def softmax_forward(x):
    # x: (..., N) -> y: (..., N), each row (the last axis) summing to 1, and a cache
    raise NotImplementedError("your code here")


def softmax_backward(dy, cache):
    # dy: (..., N) -> dx: (..., N)
    raise NotImplementedError("your code here")


def cross_entropy_forward(logits, labels):
    # logits: (N, C), labels: (N,) integers, -100 for a row that does not count
    # -> the mean loss over the counted rows (a scalar), and a cache
    raise NotImplementedError("your code here")


def cross_entropy_backward(dloss, cache):
    # dloss: a scalar (1.0 for the loss itself) -> dlogits: (N, C)
    raise NotImplementedError("your code here")


# %%
check("softmax", softmax_forward, softmax_backward)
check("cross_entropy", cross_entropy_forward, cross_entropy_backward)
