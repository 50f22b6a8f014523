"""`npbert minimal-pairs CHECKPOINT PAIRS`: which sentence of each minimal pair a masked LM prefers
(pseudo-log-likelihood), as accuracy overall, per field, phenomenon and paradigm, beside the
counting baselines of its own pretraining corpus and, if asked, a random-initialised BERT."""
from npbert.commands import add_backend_argument, training_backend
from npbert.commands.arg_types import comma_list, positive_int, seed

BASELINES = ("unigram", "ngram", "random", "none")


def register(sub):
    p = sub.add_parser("minimal-pairs", help="score BLiMP-style minimal pairs with a masked LM and its baselines",
                       description="Score minimal pairs (BLiMP's JSON lines: sentence_good, sentence_bad, field, "
                       "linguistics_term, UID, pairID) by pseudo-log-likelihood: a pair is right when the good "
                       "sentence scores higher; a tie is wrong. docs/linguistics.md says more.")
    p.add_argument("checkpoint", help="a checkpoint directory with a masked-LM head (e.g. runs/pretrain/checkpoint)")
    p.add_argument("pairs", help="a .jsonl file of minimal pairs, a directory of them (BLiMP's data/), or "
                   "`builtin` (npbert's own small set over the built-in corpus's words)")
    p.add_argument("--scores", default=None, metavar="FILE",
                   help="write one JSON line per pair: pairID, UID, pll_good, pll_bad, tokens_good, tokens_bad, "
                   "correct, has_unk (default: none)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="write the accuracies of every scorer and group, and the cost, as one JSON object (default: none)")
    p.add_argument("--exclude-unk", action="store_true",
                   help="leave out the pairs where either sentence has an [UNK] piece (default: score them, "
                   "and count them)")
    p.add_argument("--baselines", type=comma_list(BASELINES), default=None,
                   help="scorers beside the model: unigram and ngram count the model's pretraining corpus, random "
                   "is a random-initialised BERT of the same size, none (default: unigram,ngram when the "
                   "checkpoint's pretraining data can be found, else none)")
    p.add_argument("--data", default=None,
                   help="the prepared pretraining data the counting baselines count (default: the checkpoint's own, "
                   "from its training state or a data/ beside it)")
    p.add_argument("--ngram-order", type=positive_int, default=3, help="order of the Kneser-Ney n-gram baseline")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random-initialised BERT")
    p.add_argument("--per-paradigm", type=positive_int, default=None, metavar="N",
                   help="only the first N pairs of each paradigm (default: all)")
    p.add_argument("--batch-tokens", type=positive_int, default=4096,
                   help="tokens of masked copies per forward pass")
    add_backend_argument(p, help="hot-op backend (default: numba, or NPBERT_BACKEND)", default=training_backend())
    p.set_defaults(func=run)


def run(args):
    from npbert.allocator import keep_freed_memory
    from npbert.checkpoint import load_config, load_pretrained
    from npbert.linguistics import minimal_pairs as mp
    from npbert.linguistics.builtin_pairs import read_pairs_or_builtin
    from npbert.linguistics.report import SCORE_FIELDS, SUMMARY_FIELDS, format_table, score_lines, summary, verdict
    from npbert.outputs import check_outputs, json_output
    check_outputs([json_output("--scores", args.scores, SCORE_FIELDS),                 # before any work
                   json_output("--json", args.json, SUMMARY_FIELDS)],
                  inputs=[args.checkpoint, args.data, args.pairs if args.pairs != "builtin" else None])
    check_ngram_order(args.ngram_order, load_config(args.checkpoint).vocab_size)
    keep_freed_memory()              # each batch reuses the last one's buffers: no page faults per batch
    pairs = read_pairs_or_builtin(args.pairs, args.per_paradigm, say=print)
    loaded = load_pretrained(args.checkpoint)
    mp.require_mlm_head(loaded.params, loaded.config, args.checkpoint)
    tokenizer = require_tokenizer(loaded, args.checkpoint)
    tokenized = mp.tokenize_pairs(tokenizer, pairs, loaded.config.max_position_embeddings, say=print)
    describe(args, tokenized, loaded.config)
    unk_pairs = int(tokenized.has_unk.sum())
    tokenized = tokenized.without_unk() if args.exclude_unk else tokenized
    counting = counting_models(args, loaded, tokenizer)                     # before the long part: its errors first
    scored = mp.ScoredPairs(tokenized)
    mp.score_with_bert(scored, "bert", loaded.params, loaded.config, tokenizer, args.batch_tokens)
    print(mp.format_cost(scored.costs["bert"]))
    if "random" in (args.baselines or ()):
        mp.score_with_bert(scored, "random", mp.random_like(loaded, args.seed), loaded.config, tokenizer,
                           args.batch_tokens)
    for model in counting:
        mp.score_with_counts(scored, model)
    rows = scored.accuracies()
    print("\n".join(format_table(rows, list(scored.scores))))
    print(verdict(rows[0], list(scored.scores)) or "no baseline to compare with (--baselines)")
    write_outputs(args, scored, summary(rows, scored, unk_pairs, args.exclude_unk), score_lines)
    return 0


def check_ngram_order(order: int, vocab_size: int) -> None:
    """Refuse an n-gram order the counting cannot key (before the pairs are read or a piece counted)."""
    from npbert.errors import DataError
    from npbert.linguistics.counting import max_order
    if order > max_order(vocab_size):
        raise DataError(f"--ngram-order {order}: at most {max_order(vocab_size)} for a vocabulary of {vocab_size:,} "
                        "pieces (an n-gram is counted under one 64-bit key)")


def require_tokenizer(loaded, where):
    from npbert.errors import CheckpointError
    if loaded.tokenizer is None:
        raise CheckpointError(f"{where} has no vocab.txt, so the sentences cannot be tokenized")
    return loaded.tokenizer


def counting_models(args, loaded, tokenizer) -> list:
    """The counting baselines asked for (by default: both, when the pretraining data are known)."""
    from npbert.errors import DataError
    from npbert.linguistics.counting import KneserNeyModel, UnigramModel
    from npbert.linguistics.seen_corpus import pretraining_data_of, training_sentences
    asked = args.baselines if args.baselines is not None else ["unigram", "ngram"]
    wanted = [b for b in asked if b in ("unigram", "ngram")]
    data = args.data or pretraining_data_of(args.checkpoint)
    if not wanted:
        return []
    if data is None:
        if args.baselines is None:
            print("no pretraining data found for the counting baselines (give --data): scoring the model alone")
            return []
        raise DataError(f"--baselines {','.join(wanted)} counts the model's pretraining corpus: give --data DIR, "
                        "the directory `npbert prepare` made (a run's OUT/data)")
    sentences = training_sentences(data, tokenizer.ids_to_tokens)
    print(f"counting {sum(map(len, sentences)):,} pieces of {len(sentences):,} training sentences of {data}")
    V = loaded.config.vocab_size
    return [UnigramModel(sentences, V) if b == "unigram" else KneserNeyModel(sentences, V, args.ngram_order)
            for b in wanted]


def describe(args, tokenized, config) -> None:
    t = tokenized
    paradigms = len({p.paradigm for p in t.pairs})
    print(f"{len(t.pairs):,} minimal pairs from {args.pairs} ({paradigms} paradigms); {int(t.has_unk.sum()):,} hold "
          f"[UNK] ({'left out' if args.exclude_unk else 'scored; --exclude-unk leaves them out'})")
    print(f"model {args.checkpoint}: {config.num_hidden_layers} layers, hidden {config.hidden_size}, vocab "
          f"{config.vocab_size:,}; pseudo-log-likelihood, a tie counts as wrong")


def write_outputs(args, scored, record, score_lines) -> None:
    import json

    from npbert.atomic import atomic_write
    if args.scores:
        atomic_write(args.scores, lambda f: f.writelines((line + "\n").encode() for line in score_lines(scored, "bert")))
    if args.json:
        atomic_write(args.json, lambda f: f.write((json.dumps(record, indent=1) + "\n").encode()))
