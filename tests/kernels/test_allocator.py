"""keep_freed_memory: a large array freed and allocated again must not be page-faulted in again."""
import subprocess
import sys

import pytest
from support.patience import HANG_SECONDS

pytest.importorskip("resource")

STEPS = 5
CODE = f"""
import resource, sys
import numpy as np
from npbert.allocator import keep_freed_memory

if sys.argv[1] == "keep" and not keep_freed_memory():
    print("not glibc"); sys.exit(0)

def step():                                     # a training step's big buffer: 64 MB, every page touched
    a = np.ones((64 << 20) // 8)                # above glibc's largest adaptive mmap threshold (32 MB)
    del a

step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({STEPS}):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode: str) -> str:
    r = subprocess.run([sys.executable, "-c", CODE, mode], capture_output=True, text=True,
                       timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_freed_memory_is_reused_without_page_faults():
    kept = page_faults("keep")
    if kept == "not glibc":
        pytest.skip("keep_freed_memory is a no-op off glibc")
    # glibc's default maps, touches and unmaps the buffer every step: at least one fault per page,
    # even with 2 MB transparent huge pages (4 KB pages would give 16,384 a step)
    assert int(page_faults("default")) >= STEPS * (64 << 20) // (2 << 20)
    assert int(kept) < STEPS                          # kept: the heap block is reused, already mapped
