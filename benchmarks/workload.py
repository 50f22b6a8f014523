"""The benchmark's workload: configs, a random pretraining batch, the FLOP count, and one
npbert training / inference step. Used by bench.py (and hf.py builds the same batch).

FLOPs count the matmuls only, 2 * m * n * k each; a backward pass does two matmuls for every
forward one (dx and dW), so a training step is 3x the forward count. Elementwise work
(softmax, GELU, LayerNorm, the optimizer) is not counted: achieved GFLOP/s says how close the
whole step comes to spending all its time in matmuls.

Two counts of that work: the padded one (forward_matmuls: every one of the B*T positions, what
npbert's padded pretraining_forward multiplies) and the needed one (needed_matmuls: only what
the loss reads: real tokens, attention within each sequence, and the last layer's queries,
attention output and feed-forward only at the rows the heads read).
"""
from __future__ import annotations

import numpy as np

from npbert.config import BertConfig

T = 128                                                # default sequence length
MASKED_PER_SEQ = 20                                    # at T 128; 80 at 512, as BERT's max_predictions_per_seq
PRESETS = {"tiny": 32, "mini": 32, "small": 16, "medium": 16, "base": 8}   # preset -> batch size
VOCABS = (30522, 8192)


def make_config(preset: str, vocab: int) -> BertConfig:
    return BertConfig.from_preset(preset, vocab_size=vocab)


def make_batch(config: BertConfig, B: int, seed: int = 0, padded: bool = False, T: int = T) -> dict:
    """Random pairs, 20 masked positions a sequence, token types 0 then 1 from the middle of
    each sequence. padded=False: every sequence is T tokens long; padded=True: lengths drawn
    uniformly from [T / 4, T], [PAD] (id 0, type 0, attention mask 0) after them, as a
    batch of real text is (the masked positions and the second segment inside each length)."""
    rng = np.random.default_rng(seed)
    masked = MASKED_PER_SEQ * T // 128
    ids = rng.integers(5, config.vocab_size, (B, T))
    lengths = rng.integers(T // 4, T + 1, B) if padded else np.full(B, T)
    real = np.arange(T) < lengths[:, None]                                         # (B, T)
    types = (np.arange(T) >= lengths[:, None] // 2) & real
    pos = np.stack([np.sort(rng.choice(np.arange(1, n), masked, replace=False)) for n in lengths])
    positions = (pos + T * np.arange(B)[:, None]).reshape(-1)                       # flat into B*T
    return dict(input_ids=np.where(real, ids, 0), token_type_ids=types.astype(np.int64),
                attention_mask=real.astype(np.int64), mlm_positions=positions,
                mlm_labels=rng.integers(5, config.vocab_size, len(positions)), nsp_labels=rng.integers(0, 2, B))


BATCHES = ("random", "builtin", "imdb")               # where a benchmark batch comes from
IMDB_DOCUMENTS = 2000                                  # reviews prepared for --batches imdb (~20 s; all 25,000 take minutes)


def prepare_data(source: str, directory: str, max_documents: int | None = None) -> str:
    """Prepare `source` ("builtin" or "imdb") into directory with npbert's own pipeline and the
    default pretraining recipe's corpus options (builtin: its vocabulary, max_seq_length 64;
    imdb: a trained 8,192-token WordPiece vocabulary, max_seq_length 128), one pass
    (dupe_factor 1: the benchmark reads one batch). -> directory."""
    from npbert.data.prepare import PrepareOptions, prepare
    if max_documents is None and source == "imdb":
        max_documents = IMDB_DOCUMENTS
    prepare(PrepareOptions(corpus=source, out=directory, max_documents=max_documents, dupe_factor=1, seed=0),
            log=lambda *a, **k: None)
    return directory


def data_batch(config: BertConfig, directory: str, B: int) -> tuple:
    """-> (batch, info): the first batch of epoch 0 (seed 0) of a prepared directory's training
    split, as npbert pretrain reads it (T trimmed to the batch's longest sequence), and what it
    is. Ids the config's vocabulary cannot hold are taken modulo config.vocab_size (none are when
    the data's vocabulary is no larger than the config's: builtin 624 tokens, imdb 8,192)."""
    from npbert.data.pretraining_data import PretrainingData
    data = PretrainingData(directory, "train")
    batch = next(data.batches(B, seed=0))
    for key in ("input_ids", "mlm_labels"):
        batch[key] = batch[key] % config.vocab_size
    info = dict(data_vocab=data.vocab_size, max_seq_length=data.max_seq_length,
                split_fill=float(data.arrays["lengths"].mean()) / data.max_seq_length, **fill(batch))
    return batch, info


def benchmark_batch(config: BertConfig, batches: str, B: int, T: int = T, padded: bool = False,
                    directory: str | None = None) -> tuple:
    """-> (batch, info): random (make_batch, T and padded apply) or the first batch of the data
    prepared in directory (prepare_data; T is the batch's own)."""
    if batches == "random":
        batch = make_batch(config, B, padded=padded, T=T)
        return batch, fill(batch)
    return data_batch(config, directory, B)


def fill(batch: dict) -> dict:
    """How much of a batch is real tokens: mean length / T (1.0: no padding)."""
    mask = batch["attention_mask"]                     # (B, T)
    return dict(batch_T=int(mask.shape[1]), real_tokens=int(mask.sum()), fill=float(mask.mean()))


def forward_matmuls(config: BertConfig, B: int, masked: int, T: int = T) -> list:
    """Every matmul of pretraining_forward as (name, count, batch, m, k, n): count times a
    batch of (m, k) @ (k, n) products (attention: one per sequence and head, batched)."""
    H, I, L, V = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    N, heads = B * T, config.num_attention_heads
    d = H // heads
    return [("q, k, v, output projections", 4 * L, 1, N, H, H),
            ("FFN up", L, 1, N, H, I),
            ("FFN down", L, 1, N, I, H),
            ("scores q k^T", L, B * heads, T, d, T),
            ("context p v", L, B * heads, T, T, d),
            ("pooler", 1, 1, B, H, H),
            ("MLM transform", 1, 1, masked, H, H),
            ("tied decoder", 1, 1, masked, H, V),
            ("NSP", 1, 1, B, H, 2)]


def forward_flops(config: BertConfig, B: int, masked: int, T: int = T) -> int:
    """Matmul FLOPs of pretraining_forward: 2 m n k per matmul."""
    return matmuls_flops(forward_matmuls(config, B, masked, T))


def train_flops(config, B, masked, T=T):
    return 3 * forward_flops(config, B, masked, T)        # backward = 2x forward


def read_rows(attention_mask: np.ndarray, mlm_positions: np.ndarray) -> np.ndarray:
    """(B,) rows of each sequence the heads read from the last layer: its masked positions and
    its [CLS] (position 0), each once."""
    B, T = attention_mask.shape
    read = np.zeros((B, T), bool)                      # (B, T)
    read[:, 0] = True
    read.reshape(-1)[mlm_positions] = True
    return read.sum(1)                                 # (B,)


def needed_matmuls(config: BertConfig, attention_mask: np.ndarray, mlm_positions: np.ndarray) -> list:
    """The matmuls a step that computes only what the loss reads needs, as forward_matmuls lists
    them: linear layers at the N real tokens; attention within each sequence (n_s x n_s, sequences
    of equal length batched); the last layer's keys and values at all N, but its queries, attention
    output, FFN (and scores, R_s x n_s) only at the R rows the heads read (read_rows)."""
    H, I, L, V = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    heads = config.num_attention_heads
    d = H // heads
    lengths = attention_mask.sum(1).astype(np.int64)   # (B,)
    rows = read_rows(attention_mask, mlm_positions)    # (B,)
    N, R, B, masked = int(lengths.sum()), int(rows.sum()), len(lengths), len(mlm_positions)
    out = [("q, k, v, output projections", 4 * (L - 1), 1, N, H, H),
           ("FFN up", L - 1, 1, N, H, I),
           ("FFN down", L - 1, 1, N, I, H),
           ("last layer k, v projections", 2, 1, N, H, H),
           ("last layer q, output projections", 2, 1, R, H, H),
           ("last layer FFN up", 1, 1, R, H, I),
           ("last layer FFN down", 1, 1, R, I, H)]
    for n, seqs in zip(*np.unique(lengths, return_counts=True)):
        n, b = int(n), int(seqs) * heads
        out += [("scores q k^T", L - 1, b, n, d, n), ("context p v", L - 1, b, n, n, d)]
    for (r, n), seqs in zip(*np.unique(np.stack([rows, lengths], 1), axis=0, return_counts=True)):
        r, n, b = int(r), int(n), int(seqs) * heads
        out += [("last layer scores", 1, b, r, d, n), ("last layer context", 1, b, r, n, d)]
    return out + [("pooler", 1, 1, B, H, H),
                  ("MLM transform", 1, 1, masked, H, H),
                  ("tied decoder", 1, 1, masked, H, V),
                  ("NSP", 1, 1, B, H, 2)]


def matmuls_flops(matmuls: list) -> int:
    return sum(2 * count * batch * m * k * n for _, count, batch, m, k, n in matmuls)


def needed_forward_flops(config: BertConfig, attention_mask, mlm_positions) -> int:
    return matmuls_flops(needed_matmuls(config, attention_mask, mlm_positions))


def needed_train_flops(config: BertConfig, attention_mask, mlm_positions) -> int:
    return 3 * needed_forward_flops(config, attention_mask, mlm_positions)   # backward = 2x forward


def matmul_steps(config: BertConfig, B: int, masked: int, T: int = T, dtype=np.float32):
    """-> (train_step, infer_step) of the padded ceiling: every product of forward_matmuls."""
    return products_steps(forward_matmuls(config, B, masked, T), dtype)


def needed_matmul_steps(config: BertConfig, attention_mask, mlm_positions, dtype=np.float32):
    """-> (train_step, infer_step) of the needed ceiling: every product of needed_matmuls."""
    return products_steps(needed_matmuls(config, attention_mask, mlm_positions), dtype)


def products_steps(matmuls: list, dtype=np.float32):
    """-> (train_step, infer_step) that do nothing but the listed matmuls, in NumPy (BLAS, its
    own threads), into buffers allocated once: the ceiling a step made only of its matmuls
    would reach on this machine. Each forward product y = a @ b gets its backward pair in
    train_step: da = dy @ b^T and db = a^T @ dy (a linear layer's dx and dW, in the layout
    npbert's reference computes them)."""
    rng = np.random.default_rng(0)
    products = []
    for _, count, batch, m, k, n in matmuls:
        a, b, dy = (rng.standard_normal((batch, r, c), dtype=dtype) for r, c in ((m, k), (k, n), (m, n)))
        y, da, db = np.empty((batch, m, n), dtype), np.empty((batch, m, k), dtype), np.empty((batch, k, n), dtype)
        products.append((count, a, b, dy, y, da, db))

    def step(backward):
        for count, a, b, dy, y, da, db in products:
            for _ in range(count):
                np.matmul(a, b, out=y)                             # (batch, m, n)
                if backward:
                    np.matmul(dy, b.transpose(0, 2, 1), out=da)    # (batch, m, k)
                    np.matmul(a.transpose(0, 2, 1), dy, out=db)    # (batch, k, n)

    return (lambda: step(True)), (lambda: step(False))


def init_params(config: BertConfig, seed: int = 0) -> dict:
    """The benchmark's float32 weights (npbert's initialisation; ort.py builds its graph from them)."""
    from npbert.model_params import init_params as npbert_init
    return npbert_init(config, np.random.default_rng(seed), dtype=np.float32)


NPBERT_IMPLS = ("numpy", "numba", "numpy-padded", "numba-padded")   # backend, and -padded: today's padded step


def npbert_impl(impl: str) -> tuple:
    """An npbert impl name -> (backend, packed): "numba" is the packed training step (what npbert
    pretrain runs), "numba-padded" the padded pretraining_forward; "numpy" likewise."""
    if impl not in NPBERT_IMPLS:
        raise ValueError(f"not an npbert impl: {impl!r} (one of {', '.join(NPBERT_IMPLS)})")
    backend, _, variant = impl.partition("-")
    return backend, variant != "padded"


def npbert_steps(config: BertConfig, batch: dict, seed: int = 0, packed: bool = True):
    """-> (train_step, infer_step, optimizer): train = forward + backward + clip + AdamW; infer =
    npbert.inference.pretraining_inference (no dropout, no caches, padding not computed).
    packed: train with the packed step (BertModel on the packed layout: real tokens only, the
    last layer at the rows the heads read) or, False, on the padded layout (every position).
    float32 throughout."""
    from npbert import optim
    from npbert.inference import pretraining_inference
    from npbert.model import pretraining_backward, pretraining_forward

    params = init_params(config, seed)
    opt = optim.AdamW(params)
    rng = np.random.default_rng(seed + 1)

    def train_step():
        out, cache = pretraining_forward(params, config, **batch, rng=rng, packed=packed)
        grads = pretraining_backward(cache)
        del cache
        optim.clip_by_global_norm(grads, 1.0)        # looked up on the module: parts.py times it
        opt.step(params, grads, 1e-4)
        return float(out["loss"])

    def infer_step():
        return float(pretraining_inference(params, config, **batch)["loss"])

    return train_step, infer_step, opt
