"""No verdict hangs on the clock (a loaded machine slows the suite several times over): every
wait in tests/ on a subprocess, a thread or a notebook is patience.HANG_SECONDS, which only a hang
reaches, and Hypothesis times no example."""
import re

from hypothesis import HealthCheck, settings

from support.paths import TESTS

TIMED = re.compile(r"\b(?:timeout|deadline|startup_timeout|iopub_timeout)\s*=\s*\d|\.(?:join|wait)\(\s*\d")


def test_no_wait_in_the_tests_is_a_number_of_seconds():
    found = [f"{path.name}:{n}: {line.strip()}" for path in sorted(TESTS.rglob("*.py"))
             if path.name not in ("patience.py", "test_no_timed_waits.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if TIMED.search(line) and not line.lstrip().startswith("def ")]   # (a fake's signature copies the real one's)
    assert not found, "a wait that a slow machine can trip; use patience.HANG_SECONDS:\n" + "\n".join(found)


def test_hypothesis_times_no_example():
    assert settings.default.deadline is None and HealthCheck.too_slow in settings.default.suppress_health_check


def test_the_checker_sees_a_timed_wait():
    assert TIMED.search("subprocess.run(cmd, timeout=120)") and TIMED.search("worker.join(60)")
    assert not TIMED.search("subprocess.run(cmd, timeout=HANG_SECONDS)")
