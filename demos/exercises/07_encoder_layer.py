"""Exercise 07 - the encoder layer's backward.

Write encoder_layer_backward, then run the last cell: `check` runs your code through npbert's golden
vectors and central finite differences, and says what is wrong first (which tensor, along which
axis, the likely cause). The forward is npbert's (npbert/layers/encoder_layer.py); the backward puts
its sublayers' backwards together. A second check runs with dropout on, where the golden vectors
cannot see a missing mask. The solution is npbert's own: show_solution("encoder_layer").

    python demos/exercises/07_encoder_layer.py
    python demos/notebooks.py exercises/07_encoder_layer      (writes the notebook: demos/exercises/07_encoder_layer.ipynb)
"""

# %% [markdown]
# > from docs/layers/encoder_layer.md: Forward
# > from docs/layers/encoder_layer.md: Backward

# %%
import numpy as np  # noqa: F401  (yours to use)

from npbert.exercises import check, show_solution  # noqa: F401  (show_solution: when stuck)
from npbert.layers.attention import self_attention_backward      # (dout, cache) -> dx, {name: grad}
from npbert.layers.feedforward import feedforward_backward         # (dout, cache) -> dx, {name: grad}
from npbert.ops import dropout_backward, layernorm_backward        # (dy, cache) -> dx; -> dx, dgamma, dbeta


# %%
def encoder_layer_backward(dy, cache):
    # dy: (N, H) -> dx: (N, H), the layer's rows (N = B*T, row b*T + t: npbert's layers work on rows),
    # and {name: gradient} for the layer's 16 parameters, named as in
    # params ("attention.self.query.weight", ..., "output.LayerNorm.bias"). npbert's
    # encoder_layer_forward made the cache, an EncoderLayerCache with the fields attention,
    # attention_dropout, attention_norm, feedforward, output_dropout, output_norm.
    raise NotImplementedError("your code here")


# %%
check("encoder_layer", encoder_layer_backward)
