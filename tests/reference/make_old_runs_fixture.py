"""tests/fixtures/old_pcg64_runs.tar.gz: real run directories written by the npbert whose dropout
drew its masks from NumPy's PCG64 (before dropout was counter-based: commit 6aa8916),
for tests/pretraining/test_resume_pcg64_dropout_runs.py. Run it with that npbert first on the path:

    git worktree add /tmp/old-npbert 6aa8916
    PYTHONPATH=/tmp/old-npbert NPBERT_BACKEND=numpy python tests/reference/make_old_runs_fixture.py

It prepares a small built-in corpus (data/) and pretrains a 1-layer model on it twice, with dropout
0.1 and with none: run-<name>/ stopped after 3 of 6 steps (resumable), whole-<name>/ the same run
uninterrupted (only its metrics.jsonl kept: what a resume should continue into). root.txt records where
they were written: the paths inside training_state.json start with it.
"""
import os
import sys
import tarfile
import tempfile

import npbert
from npbert.data.prepare import PrepareOptions, prepare
from npbert.pretraining.recipe import PretrainOptions, pretrain

SMALL = dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=64)
OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "old_pcg64_runs.tar.gz")


def quiet(*args, **kwargs):
    pass


def main():
    print("npbert from", npbert.__file__, file=sys.stderr)
    root = tempfile.mkdtemp(prefix="npbert-old-runs-")
    data = os.path.join(root, "data")
    prepare(PrepareOptions(corpus="builtin", out=data, max_documents=24, dupe_factor=1, max_seq_length=32, seed=3),
            log=quiet)
    for name, p_drop in (("dropout", 0.1), ("no-dropout", 0.0)):
        for prefix, stop_after in (("run-", 3), ("whole-", None)):
            pretrain(PretrainOptions(out=os.path.join(root, prefix + name), data=data, preset="tiny",
                                     model_overrides=SMALL, steps=6, batch_size=8, learning_rate=3e-3, log_every=1,
                                     eval_every=0, save_every=3, seed=5, hidden_dropout_prob=p_drop,
                                     attention_probs_dropout_prob=p_drop, stop_after=stop_after), log=quiet)
    with open(os.path.join(root, "root.txt"), "w") as f:
        f.write(root)
    with tarfile.open(OUT, "w:gz") as tar:
        for name in sorted(os.listdir(root)):
            keep = os.path.join(name, "metrics.jsonl") if name.startswith("whole-") else name   # its losses only
            tar.add(os.path.join(root, keep), arcname=keep)
    print("wrote", os.path.abspath(OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
