"""The pieces of npbert/training/ on their own: the loop's pieces are tested through pretraining
and fine-tuning in pretraining/ and finetuning/test_finetune.py."""
import json

import pytest

from npbert.training.metrics_log import MetricsLog
from npbert.option_declaration import check_ranges
from npbert.training.training_options import resumed_options
from npbert.training.overfitting import RisingLossWatch
from npbert.errors import NpbertError
from npbert.pretraining.recipe import PretrainOptions


def test_rising_loss_is_warned_once_after_three_rises_in_a_row():
    watch = RisingLossWatch()
    said = [watch.add(step, loss) for step, loss in enumerate([5, 4, 4.5, 4.4, 4.6, 4.8, 5.0, 6, 7], 1)]
    assert [i for i, s in enumerate(said) if s] == [6]                  # 4.4 < 4.6 < 4.8 < 5.0
    assert "lowest 4.000 at step 2, now 5.000" in said[6]
    again = RisingLossWatch(watch.history)                             # as a resumed run restores it
    assert again.add(10, 8) is None


def test_a_flat_or_noisy_loss_is_not_warned_about():
    watch = RisingLossWatch()
    assert not any(watch.add(s, v) for s, v in enumerate([3, 3, 3, 3.1, 3.0, 3.2, 3.1, 3.3, 3.3, 3.4]))
    # the hour recipe's last evaluations, the learning rate near 0: three rises of a thousandth
    watch = RisingLossWatch()
    assert not any(watch.add(s, v) for s, v in enumerate([3.560, 3.534, 3.5342, 3.5345, 3.535]))
    assert watch.add(5, 3.6) is not None                      # four rises in a row, 1.9 % above the lowest


def test_metrics_log_on_resume_drops_later_records_and_a_half_written_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(dict(kind="train", step=s)) + "\n" for s in range(1, 6)) + '{"kind": "tr')
    log = MetricsLog(str(path), keep_until_step=3)
    log.write(kind="train", step=4)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3, 4]
    MetricsLog(str(path))                                               # a new run starts a new log
    assert not path.exists()


def test_option_numbers_are_checked_with_the_flag_named():
    nan, inf = float("nan"), float("inf")
    for change, message in ((dict(steps=0), "--steps must be an integer >= 1, got 0"),
                            (dict(steps=True), "--steps must be an integer >= 1, got True"),
                            (dict(learning_rate=-1.0), r"--learning-rate must be a number in \[0, 1\], got -1.0"),
                            (dict(batch_size=None), r"--batch-size must be an integer >= 1, got None"),
                            (dict(hidden_dropout_prob=1.0), r"--hidden-dropout-prob must be a number in \[0, 1\)"),
                            (dict(max_grad_norm=nan), r"--max-grad-norm must be a number in \[0, 1e\+06\], got nan"),
                            (dict(max_grad_norm=inf), r"--max-grad-norm must be a number in \[0, 1e\+06\], got inf"),
                            (dict(vocab_size=8), "--vocab-size must be an integer >= 16, got 8"),
                            (dict(preset="huge"), "--preset 'huge' is not one of tiny, ")):
        with pytest.raises(NpbertError, match=message):
            check_ranges(PretrainOptions(**change))
    check_ranges(PretrainOptions(warmup_steps=None, learning_rate=1, eval_every=0))   # None: the default's


def test_resumed_options_keep_the_saved_run_and_take_only_what_may_change():
    saved = vars(PretrainOptions(steps=40, log_every=5))
    opts = resumed_options(PretrainOptions(steps=40, log_every=9, seed=0), saved, {"steps", "log_every", "seed"},
                           ("log_every",), "runs/x")
    assert (opts.steps, opts.log_every) == (40, 9)
    with pytest.raises(NpbertError, match="--seed 3 cannot change when resuming: the run in runs/x was started "
                                          "with --seed 0"):
        resumed_options(PretrainOptions(seed=3), saved, {"seed"}, ("log_every",), "runs/x")
