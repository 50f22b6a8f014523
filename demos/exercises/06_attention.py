"""Exercise 06 - the attention core.

Write attention_core_forward and attention_core_backward, then run the last cell: `check` runs your
code through npbert's golden vectors and central finite differences, and says what is wrong first
(which tensor, along which axis, the likely cause). The golden batch has padded sequences (lengths
7, 4, 5): the mask has work to do. The solution is npbert's own: show_solution("attention").

    python demos/exercises/06_attention.py
    python demos/notebooks.py exercises/06_attention      (writes the notebook: demos/exercises/06_attention.ipynb)
"""

# %% [markdown]
# > from docs/layers/attention.md: Forward
# > from docs/layers/attention.md: The padding mask
# > from docs/layers/attention.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def attention_core_forward(q, k, v, mask_bias, p_drop, rng):
    # q, k, v: (B, A, T, D); mask_bias: (B, T), 0 for a real key and finfo.min for a padded one
    # -> context: (B, A, T, D), and a cache. p_drop is 0 and rng None here: leave dropout out.
    raise NotImplementedError("your code here")


def attention_core_backward(dcontext, cache):
    # dcontext: (B, A, T, D) -> dq, dk, dv: (B, A, T, D) each
    raise NotImplementedError("your code here")


# %%
check("attention", attention_core_forward, attention_core_backward)
