"""What the BLAS under NumPy is doing on this machine: the OpenBLAS kernel family ("core type")
it picked, its build, and the environment variables that change it.

OpenBLAS chooses its kernels by CPU at load time unless OPENBLAS_CORETYPE forces one (some
shared machines export OPENBLAS_CORETYPE=Haswell, which puts an AVX-512 CPU on AVX2 kernels
at about half the float32 matmul speed), so a benchmark has to say which it measured.
"""
from __future__ import annotations

import ctypes
import os
import platform

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS")


def set_thread_count(threads: int) -> None:
    """Every thread pool a benchmark meets (BLAS, OpenMP, MKL, npbert's kernels) at `threads`; call it
    before NumPy loads its BLAS (this module does not import NumPy)."""
    for var in THREAD_VARS:
        os.environ[var] = str(threads)


ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT",
       "OMP_NUM_THREADS", "NPBERT_NUM_THREADS")


def openblas_info() -> dict:
    """{"blas_core": ..., "blas_config": ...} from the OpenBLAS this process loaded (None when
    NumPy uses another BLAS: npbert.kernels.blas finds it), and the environment variables above
    that are set."""
    from npbert.kernels import blas
    info = {"blas_core": None, "blas_config": None}
    if blas.available():
        get_core, get_config = blas.function("openblas_get_corename"), blas.function("openblas_get_config")
        get_core.restype = get_config.restype = ctypes.c_char_p
        info.update(blas_core=get_core().decode(), blas_config=get_config().decode().strip())
    info["env"] = {k: os.environ[k] for k in ENV if k in os.environ}
    return info


def describe(info: dict) -> str:
    env = " ".join(f"{k}={v}" for k, v in info.get("env", {}).items()) or "none of them set"
    core = info.get("blas_core") or "not OpenBLAS"
    return f"OpenBLAS core type: {core} ({info.get('blas_config') or '-'}); environment: {env}"


def cpu_name() -> str:
    """The CPU's model name, with " (AVX-512)" when it has AVX-512F (float32 GEMM about twice as fast)."""
    try:
        text = open("/proc/cpuinfo").read()
        name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name"))
        return name + (" (AVX-512)" if "avx512f" in text else " (AVX2)" if "avx2" in text else "")
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()
