"""`npbert pretrain`: masked LM + next-sentence prediction, from the built-in corpus by default."""
from npbert.commands.arg_types import non_negative_int, positive_int, probability
from npbert.commands.corpus_args import add_corpus_arguments
from npbert.commands.training_args import add_optimizer_arguments, add_run_arguments, track_typed
from npbert.config import PRESETS


def register(sub):
    from npbert.pretrain import PretrainOptions
    d = PretrainOptions()
    p = sub.add_parser("pretrain", help="pretrain a small BERT (MLM + NSP); no arguments: built-in corpus, a few "
                                        "minutes",
                       description="Pretrain BERT with masked LM + next-sentence prediction. With no arguments it "
                                   "prepares npbert's built-in corpus and trains the tiny preset in a few minutes on "
                                   "a 2-core CPU (measured: docs/pretraining.md).")
    track_typed(p)
    p.add_argument("--out", default=d.out,
                   help="run directory; when not given and it holds a run, the next free one (runs/pretrain-2, ...)")
    p.add_argument("--data", default=None,
                   help="a directory made by `npbert prepare`, instead of --corpus (default: --corpus prepared "
                        "into OUT/data)")
    add_corpus_arguments(p)
    p.add_argument("--preset", choices=list(PRESETS), default=d.preset,
                   help="size of a new model (`npbert info PRESET` shows it)")
    p.add_argument("--model", default=None,
                   help="a checkpoint (npbert or Hugging Face) to pretrain further instead of a new --preset model: "
                        "its weights and vocabulary, a new optimizer and learning-rate schedule (default: none)")
    p.add_argument("--steps", type=positive_int, default=d.steps, help="training steps (batches)")
    p.add_argument("--no-nsp", action="store_true",
                   help="masked LM only (the BERT paper's \"No NSP\"): the same sentence-pair instances and batches, "
                        "no next-sentence loss; the NSP head and the pooler are kept but never updated")
    add_optimizer_arguments(p, d)
    p.add_argument("--warmup-steps", type=non_negative_int, default=None,
                   help="steps over which the learning rate rises from 0 (default: 25%% of --steps)")
    p.add_argument("--hidden-dropout-prob", type=probability, default=d.hidden_dropout_prob,
                   help="dropout on the embeddings' and every sublayer's output")
    p.add_argument("--attention-probs-dropout-prob", type=probability, default=d.attention_probs_dropout_prob,
                   help="dropout on the attention probabilities")
    p.add_argument("--eval-every", type=non_negative_int, default=d.eval_every, help="evaluate on the held-out data every N steps")
    p.add_argument("--eval-batches", type=non_negative_int, default=d.eval_batches, help="held-out batches per evaluation")
    add_run_arguments(p, d, "save a resumable checkpoint every N steps", "npbert.pretrain:pretrain")
