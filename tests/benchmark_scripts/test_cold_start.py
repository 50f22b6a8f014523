"""benchmarks/cold_start.py's compile timer on a real compile: a caller and the callee compiled
inside it are each named once, the callee under its caller, and only the outermost compile
counts towards the total (no figure is asserted: times are the benchmark's to print)."""
from numba import njit
from numba.core import event

from support.scripts import load_script


def test_the_compile_timer_names_each_compile_once_and_nests_callees():
    cold_start = load_script("benchmarks/cold_start.py")

    @njit
    def callee(x):
        return x + 1

    @njit
    def caller(x):
        return callee(x) * 2

    timer = cold_start.CompileTimer()
    event.register("numba:compile", timer)
    try:
        assert caller(1) == 4
    finally:
        event.unregister("numba:compile", timer)
    names = {name.split("(")[0]: (cpu, wall, parent) for name, (cpu, wall, parent) in timer.own.items()}
    assert set(names) >= {"test_cold_start.caller", "test_cold_start.callee"}
    assert names["test_cold_start.callee"][2].startswith("test_cold_start.caller(")
    assert names["test_cold_start.caller"][2] == ""
    assert timer.stack == [] and timer.names == []
    assert timer.total_cpu >= names["test_cold_start.caller"][0]     # the total holds its callees' compiles too
