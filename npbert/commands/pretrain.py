"""`npbert pretrain`: masked LM + next-sentence prediction, from the built-in corpus by default."""
from npbert.commands.training_args import add_optimizer_arguments, add_run_arguments, run_training, track_typed
from npbert.config import PRESETS


def register(sub):
    from npbert.pretrain import PretrainOptions
    d = PretrainOptions()
    p = sub.add_parser("pretrain", help="pretrain a small BERT (MLM + NSP); no arguments: built-in corpus, ~5 min",
                       description="Pretrain BERT with masked LM + next-sentence prediction. With no arguments it "
                                   "prepares npbert's built-in corpus and trains the tiny preset in about 5 minutes "
                                   "on a 2-core CPU.")
    track_typed(p)
    p.add_argument("--out", default=d.out,
                   help="run directory; when not given and it holds a run, the next free one (runs/pretrain-2, ...)")
    p.add_argument("--corpus", default=d.corpus, help="builtin | imdb | PATH to a text file or directory")
    p.add_argument("--data", default=None,
                   help="a directory made by `npbert prepare`, instead of --corpus (default: --corpus prepared "
                        "into OUT/data)")
    p.add_argument("--vocab", default=None, help="vocab.txt for --corpus (default: trained from the corpus)")
    p.add_argument("--vocab-size", type=int, default=d.vocab_size, help="size of a trained vocabulary")
    p.add_argument("--max-seq-length", type=int, default=None,
                   help="tokens per instance (default: 64 for builtin, else 128)")
    p.add_argument("--dupe-factor", type=int, default=None,
                   help="passes over the corpus, each masked differently (default: 5 for builtin, 2 otherwise)")
    p.add_argument("--heldout-fraction", type=float, default=None,
                   help="share of --corpus documents held out for evaluation, at least 2 documents (default: 0.02)")
    p.add_argument("--max-documents", type=int, default=None,
                   help="use the first N documents of --corpus; builtin: generate N (default: all; builtin 4000)")
    p.add_argument("--cased", dest="do_lower_case", action="store_false", default=None,
                   help="keep case when preparing --corpus (default: lower-case, or the --model checkpoint's casing)")
    p.add_argument("--mask-mix", default=None, metavar="MASK/SAME/RND",
                   help="percentages of the masked positions shown as [MASK], left unchanged, replaced by a random "
                        "token, for --corpus (default: 80/10/10; with --data, the mix it was prepared with, and "
                        "another one is refused)")
    p.add_argument("--preset", choices=list(PRESETS), default=d.preset,
                   help="size of a new model (`npbert info PRESET` shows it)")
    p.add_argument("--model", default=None,
                   help="a checkpoint (npbert or Hugging Face) to pretrain further instead of a new --preset model: "
                        "its weights and vocabulary, a new optimizer and learning-rate schedule (default: none)")
    p.add_argument("--steps", type=int, default=d.steps, help="training steps (batches)")
    p.add_argument("--no-nsp", action="store_true",
                   help="masked LM only (the BERT paper's \"No NSP\"): the same sentence-pair instances and batches, "
                        "no next-sentence loss; the NSP head and the pooler are kept but never updated")
    add_optimizer_arguments(p, d)
    p.add_argument("--warmup-steps", type=int, default=None,
                   help="steps over which the learning rate rises from 0 (default: 25%% of --steps)")
    p.add_argument("--hidden-dropout-prob", type=float, default=d.hidden_dropout_prob,
                   help="dropout on the embeddings' and every sublayer's output")
    p.add_argument("--attention-probs-dropout-prob", type=float, default=d.attention_probs_dropout_prob,
                   help="dropout on the attention probabilities")
    p.add_argument("--eval-every", type=int, default=d.eval_every, help="evaluate on the held-out data every N steps")
    p.add_argument("--eval-batches", type=int, default=d.eval_batches, help="held-out batches per evaluation")
    p.add_argument("--save-every", type=int, default=d.save_every, help="save a resumable checkpoint every N steps")
    add_run_arguments(p, d)
    p.set_defaults(func=run)


def run(args):
    from npbert.pretrain import PretrainOptions, pretrain
    return run_training(pretrain, PretrainOptions, args)
