"""One AdamW update of one parameter tensor, in place: the hot op behind npbert.optim.AdamW.step.

    m <- b1 m + (1 - b1) g
    v <- b2 v + (1 - b2) g^2
    p <- p (1 - lr wd)                                 skipped when wd == 0
    p <- p - (lr / c1) m / (sqrt(v) / sqrt(c2) + eps)  c1, c2: bias corrections (1 when off)

Each line is a NumPy pass (the last in torch.optim.AdamW's order of operations); every
constant is a scalar of p's dtype, so float32 parameters are updated in float32 throughout.
"""
import numpy as np


def adamw_update(p, g, m, v, lr, b1, b2, eps, c1, c2, weight_decay):
    # p, g, m, v: (...) same shape and dtype; p, m, v are updated in place
    dt = p.dtype.type
    m *= dt(b1)
    m += dt(1.0 - b1) * g
    v *= dt(b2)
    v += dt(1.0 - b2) * (g * g)
    if weight_decay:
        p *= dt(1.0 - lr * weight_decay)
    denom = np.sqrt(v) / dt(np.sqrt(c2)) + dt(eps)
    p -= dt(lr / c1) * m / denom
