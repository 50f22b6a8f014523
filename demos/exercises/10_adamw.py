"""Exercise 10 - AdamW's update.

Write adamw_update (one parameter tensor, in place), then run the last cell: `check` runs your code
through npbert's golden vectors and central finite differences, and says what is wrong first (which
tensor, along which axis, the likely cause). Graded on the golden training steps: every parameter of
a small BERT over 5 steps, bias correction on and off. The solution is npbert's own:
show_solution("adamw").

    python demos/exercises/10_adamw.py
    python demos/notebooks.py exercises/10_adamw      (writes the notebook: demos/exercises/10_adamw.ipynb)
"""

# %% [markdown]
# > from docs/pretraining.md: One step
# > from docs/pretraining.md: AdamW, one update written out

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)


# %%
def adamw_update(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    # p, g, m, v: (...) the parameter, its (clipped) gradient and the two moments, all one shape;
    # update m, v and p IN PLACE (m *= ..., p -= ...), return nothing.
    #   m <- b1 m + (1 - b1) g          v <- b2 v + (1 - b2) g^2
    #   p <- p (1 - lr weight_decay)    decoupled weight decay (0 for LayerNorm and biases: the caller's choice)
    #   p <- p - lr (m / c1) / (sqrt(v / c2) + eps)
    # c1 = 1 - b1^t and c2 = 1 - b2^t are the bias corrections at step t (1 when they are off).
    raise NotImplementedError("your code here")


# %%
check("adamw", adamw_update)
