"""Every figure the course quotes about a run is the recorded run's: tests/fixtures/course_runs.json,
written by benchmarks/course_runs.py from part 6's short run and the course model's
(demos/course_model.py). Each claim is the sentence as the page writes it with the figure left
out; the figure is computed from the record, put in, and the page must say exactly that
(whitespace aside). The shapes the text describes (the accuracy rises at every evaluation, the
learning rate is a tent with no flat top, the training and held-out losses lie together) are
checked on the record too."""
import json

import pytest

from support.paths import FIXTURES, ROOT

RECORD = json.loads((FIXTURES / "course_runs.json").read_text())
LEARN, COURSE = RECORD["learn"], RECORD["course_model"]


def kind(run, k):
    return [m for m in run["metrics"] if m["kind"] == k]


def at(run, k, step):
    return next(m for m in run["metrics"] if m["kind"] == k and m["step"] == step)


def warmup(run) -> int:
    """The warmup the lr series implies: lr(s) = peak (s - 1) / W on the way up, peak (T - s + 1) / (T - W)
    on the way down (the log at step s shows update s - 1's rate)."""
    train, T = kind(run, "train"), kind(run, "train")[-1]["step"]
    first, last = train[0], train[-1]
    slope = first["lr"] / (first["step"] - 1)                    # peak / W
    return round(T * last["lr"] / (slope + last["lr"]))          # from peak = W slope = lr_last (T - W)


def lr_peak_log(run) -> int:
    return max(kind(run, "train"), key=lambda m: m["lr"])["step"]


def tokens(guesses) -> str:
    return " ".join(f"`{t}`" for t, _ in guesses)


def fill_mask_lines(guesses: dict) -> str:
    """The guesses as `npbert fill-mask` prints them, one sentence after another."""
    out = []
    for sentence, options in guesses.items():
        out.append(sentence.replace("[MASK]", f"[{options[0][0]}]", 1))
        out.append("  [MASK] 1: " + "  ".join(f"{t} {p:.3f}" for t, p in options))
    return "\n".join(out)


def top3(guesses) -> str:
    return ", ".join(f"`{t}` {p:.2f}" for t, p in guesses[:3])


def cpu_minutes(run) -> int:
    return round(run["cpu_s"] / 60)


WALKTHROUGH = "i [MASK] this movie when i was a kid ."
MILK = "the man went to the [MASK] to buy milk ."

CLAIMS = [   # (page, the sentence with {} for the figure, the figure)
    ("demos/README.md", "--out runs/learn # about {} s of CPU", round(LEARN["cpu_s"])),
    ("demos/README.md", "token, {}) at the first evaluation", f"{kind(LEARN, 'baseline')[0]['mlm_acc']:.3f}"),
    ("demos/README.md", "at the first evaluation ({} at step 50)", f"{at(LEARN, 'eval', 50)['mlm_acc']:.3f}"),
    ("demos/README.md", "to the end of the run ({} at step 300)", f"{at(LEARN, 'eval', 300)['mlm_acc']:.3f}"),
    ("demos/README.md", "(always answering NotNext, {}: a little below it)",
     f"{kind(LEARN, 'baseline')[0]['nsp_acc']:.3f}"),
    ("demos/README.md", "for the first {} steps, then climbs",
     max(m["step"] for m in kind(LEARN, "eval") if m["nsp_acc"] <= kind(LEARN, "baseline")[0]["nsp_acc"])),
    ("demos/README.md", "then climbs ({} at step 300)", f"{at(LEARN, 'eval', 300)['nsp_acc']:.3f}"),
    ("demos/README.md", "`warmup {}`, a quarter of the 300", warmup(LEARN)),
    ("demos/README.md", "a straight line to the log at step {}", lr_peak_log(LEARN) - 10),
    ("demos/README.md", "peaks at the log of step {}", lr_peak_log(LEARN)),
    ("demos/README.md", "reached at step {}, between the two logs", warmup(LEARN) + 1),
    ("demos/README.md", "the whole warmup would be {} points", {3: "three"}.get(warmup(LEARN) // 25)),
    ("demos/README.md", "each other ({} and", f"{at(LEARN, 'train', 300)['mlm_loss']:.3f}"),
    ("demos/README.md", "and {} at step 300): no memorising", f"{at(LEARN, 'eval', 300)['mlm_loss']:.3f}"),
    ("demos/README.md", "guesses are frequent tokens ({})", tokens(next(iter(LEARN["guesses"].values())))),
    ("demos/README.md", "It takes about {} minutes of CPU on one thread", cpu_minutes(COURSE)),
    ("demos/README.md", "guesses for the default sentence are {}", top3(COURSE["guesses"][WALKTHROUGH])),
    ("README.md", "IMDB reviews in about {} minutes of CPU", cpu_minutes(COURSE)),
    ("README.md", "pretraining, about {} minutes of CPU", cpu_minutes(COURSE)),
    ("README.md", "(its guesses: {})", top3(COURSE["guesses"][WALKTHROUGH])),
    ("docs/course_model.md", "one thread, the machine shared with other jobs: {} minutes of CPU",
     cpu_minutes(COURSE)),
    ("docs/course_model.md", "({} minutes wall)", round(COURSE["wall_s"] / 60)),
    ("docs/course_model.md", "On {}, one thread", RECORD["machine"]["cpu"]),
    ("docs/course_model.md", "{} MB of weights", COURSE["megabytes"]["model.safetensors"]),
    ("docs/course_model.md", "(plus {} MB of AdamW state", COURSE["megabytes"]["training_state.npz"]),
    ("docs/course_model.md", "Held-out MLM accuracy {} (most", f"{kind(COURSE, 'final')[0]['mlm_acc']:.3f}"),
    ("docs/course_model.md", "baseline {}), NSP", f"{kind(COURSE, 'baseline')[0]['mlm_acc']:.3f}"),
    ("docs/course_model.md", "NSP accuracy {} (majority", f"{kind(COURSE, 'final')[0]['nsp_acc']:.3f}"),
    ("docs/course_model.md", "(majority class {}: the NSP head", f"{kind(COURSE, 'baseline')[0]['nsp_acc']:.3f}"),
    ("docs/course_model.md", "```\n{}\n```", fill_mask_lines(COURSE["guesses"])),
    ("docs/course_model.md", "guesses from their world: {} for the man", tokens(COURSE["guesses"][MILK][:3])),
    ("docs/course_model.md", "made in {} minutes of CPU from two", cpu_minutes(COURSE)),
]


def squeezed(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("page, sentence, figure", CLAIMS, ids=[f"{p}: {s[:40]}" for p, s, _ in CLAIMS])
def test_the_page_quotes_the_recorded_run(page, sentence, figure):
    text = (ROOT / page).read_text(encoding="utf-8")
    if sentence.startswith("```"):                                   # a block: line breaks matter
        assert sentence.format(figure) in text, sentence.format(figure)
    else:
        assert squeezed(sentence.format(figure)) in squeezed(text), sentence.format(figure)


def test_the_shapes_part_6_describes_are_the_runs():
    evals, base = kind(LEARN, "eval"), kind(LEARN, "baseline")[0]
    mlm = [m["mlm_acc"] for m in evals]
    assert mlm[0] > base["mlm_acc"] and all(b > a for a, b in zip(mlm, mlm[1:]))    # leaves it, rises at every one
    flat = [m for m in evals if m["nsp_acc"] <= base["nsp_acc"]]
    climbing = [m["nsp_acc"] for m in evals if m["step"] > flat[-1]["step"]]
    assert [m["step"] for m in flat] == [50, 100] and all(b > a for a, b in zip(climbing, climbing[1:]))
    lr = [m["lr"] for m in kind(LEARN, "train")]
    top = lr.index(max(lr))
    assert all(b > a for a, b in zip(lr[:top], lr[1:top + 1])) and all(b < a for a, b in zip(lr[top:], lr[top + 1:]))
    assert kind(LEARN, "train")[0]["step"] == 10                   # the first log, where the plotted line starts
    assert abs(at(LEARN, "train", 300)["mlm_loss"] - at(LEARN, "eval", 300)["mlm_loss"]) < 0.1


def test_the_course_model_commands_are_the_recipe():
    import sys
    sys.path.insert(0, str(ROOT / "demos"))
    import course_model
    assert COURSE["pretrain"] == " ".join(course_model.RECIPE) and list(COURSE["guesses"]) == course_model.SENTENCES
    page = squeezed((ROOT / "docs" / "course_model.md").read_text(encoding="utf-8"))
    assert squeezed(" ".join(course_model.RECIPE)) in page.replace(" \\ ", " ")
    assert course_model.SENTENCES[0] == WALKTHROUGH == __import__("walkthrough_stages").SENTENCE
