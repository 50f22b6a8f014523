"""Exercise 03 - LayerNorm.

Write layernorm_forward and layernorm_backward, then run the last cell: `check` runs your code
through npbert's golden vectors and central finite differences, and says what is wrong first (which
tensor, along which axis, the likely cause). Besides the golden rows it tries a row of variance
1e-12 and a constant row, where eps decides. The solution is npbert's own:
show_solution("layernorm").

    python demos/exercises/03_layernorm.py
    python demos/notebooks.py exercises/03_layernorm      (writes the notebook: demos/exercises/03_layernorm.ipynb)
"""

# %% [markdown]
# > from docs/layers/layernorm.md: Forward
# > from docs/layers/layernorm.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def layernorm_forward(x, gamma, beta, eps):
    # x: (..., H), gamma: (H,), beta: (H,) -> y: (..., H), and a cache: what your backward needs
    raise NotImplementedError("your code here")


def layernorm_backward(dy, cache):
    # dy: (..., H) -> dx: (..., H), dgamma: (H,), dbeta: (H,)
    raise NotImplementedError("your code here")


# %%
check("layernorm", layernorm_forward, layernorm_backward)
