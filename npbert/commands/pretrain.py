"""`npbert pretrain`: masked LM + next-sentence prediction, from the built-in corpus by default."""
from npbert.commands.option_arguments import add_options
from npbert.commands.training_args import add_run_arguments


def register(sub):
    from npbert.pretraining.recipe import PretrainOptions, pretrain
    p = sub.add_parser("pretrain", help="pretrain a small BERT (MLM + NSP); no arguments: built-in corpus, a few "
                                        "minutes",
                       description="Pretrain BERT with masked LM + next-sentence prediction. With no arguments it "
                                   "prepares npbert's built-in corpus and trains the tiny preset in a few minutes on "
                                   "a 2-core CPU (measured: docs/pretraining.md).")
    add_options(p, PretrainOptions)
    add_run_arguments(p, pretrain, PretrainOptions)
