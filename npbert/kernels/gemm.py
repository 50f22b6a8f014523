"""BLAS's gemm called from compiled code, so a matmul can run inside a parallel loop's part
(kernels/threads.py) without going back to Python: C = A B through cblas_sgemm/cblas_dgemm
of the OpenBLAS NumPy loaded (kernels/blas.py), one thread each call.

The function's address is an argument, not a constant: Numba will not cache code that embeds
a pointer from this process (a ctypes function), and the address changes between processes.
`address(dtype)` gives it; 0 means "no OpenBLAS here" and callers use NumPy instead.
"""
import ctypes
import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from npbert.kernels import blas

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112          # CBLAS enum values


@intrinsic
def _cblas_gemm(typingctx, address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate):
    """cblas_?gemm(RowMajor, trans_a, trans_b, m, n, k, 1, a, lda, b, ldb, beta, c, ldc) at `address`,
    beta 1 when accumulate (c += a b) else 0 (c = a b); OpenBLAS's 64-bit-integer interface (NumPy's
    build): enums int32, sizes int64."""
    sig = types.void(address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate)

    def codegen(context, builder, signature, args):
        address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate = args
        real = context.get_value_type(signature.args[6].dtype)
        i32, i64, ptr = ir.IntType(32), ir.IntType(64), real.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64, real, ptr, i64])
        function = builder.inttoptr(address, fnty.as_pointer())

        def data(index, value):
            return context.make_array(signature.args[index])(context, builder, value).data

        beta = builder.select(builder.icmp_unsigned("!=", accumulate, ir.Constant(accumulate.type, 0)),
                              ir.Constant(real, 1.0), ir.Constant(real, 0.0))
        builder.call(function, [ir.Constant(i32, ROW_MAJOR), builder.trunc(trans_a, i32), builder.trunc(trans_b, i32),
                                m, n, k, ir.Constant(real, 1.0), data(6, a), lda, data(8, b), ldb,
                                beta, data(10, c), ldc])
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True, cache=True)
def _row_major(m, n, s0, s1, item):
    # rows of unit stride, apart by at least a row (a dimension of 1 is never stepped along)
    return (s1 == item or n <= 1) and (m <= 1 or s0 >= item * n)


@njit(nogil=True, cache=True, inline="always")
def _layout(x):
    # -> (CBLAS transpose flag, leading dimension) of a 2-D view `usable` accepts
    m, n = x.shape
    item = x.itemsize
    if _row_major(m, n, x.strides[0], x.strides[1], item):
        return NO_TRANS, max(x.strides[0] // item, n, 1)
    return TRANS, max(x.strides[1] // item, m, 1)


@njit(nogil=True, cache=True, inline="always")
def gemm(address, a, b, c):
    """c = a @ b: a (m, k), b (k, n), each with unit stride along one axis (a transposed view
    is fine); c (m, n) with unit stride along its rows. Runs in the calling thread."""
    _gemm(address, a[:, :], b[:, :], c[:, :], 0.0)       # [:, :]: layout "A", see _gemm


@njit(nogil=True, cache=True, inline="always")
def gemm_add(address, a, b, c):
    """c += a @ b, as gemm."""
    _gemm(address, a[:, :], b[:, :], c[:, :], 1.0)


@njit(nogil=True, cache=True)
def _gemm(address, a, b, c, beta):
    # c = a b + beta c; a, b, c: 2-D views of layout "A" (any strides), beta 0.0 or 1.0. Why: the
    # kernels call gemm with C, F (transposed) and A (sliced) views in many combinations, and each
    # compiled as its own version cost ~0.3 s of a cold start (benchmarks/cold_start.py), while one
    # version reads the strides at run time anyway; beta is a float because Numba compiles a
    # function once per integer or bool constant it is called with (a float is never a literal)
    accumulate = beta != 0.0
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or k == 0 and accumulate:
        return
    if k == 0:
        c[:] = 0
        return
    trans_a, lda = _layout(a)
    trans_b, ldb = _layout(b)
    _cblas_gemm(address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, max(c.strides[0] // c.itemsize, n, 1),
                accumulate)


@functools.cache
def address(dtype) -> int:
    """The address of cblas_sgemm (float32) or cblas_dgemm (float64) of NumPy's OpenBLAS, or 0."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64) or not blas.available():
        return 0
    name = "cblas_sgemm" if dtype == np.float32 else "cblas_dgemm"
    return ctypes.cast(blas.function(name), ctypes.c_void_p).value or 0


def address_for(*matrices) -> int:
    """address() for these 2-D views when they share one float dtype and each is `usable` as it
    is, else 0: the caller then uses NumPy's matmul."""
    dtype = matrices[0].dtype
    if any(m.dtype != dtype or not usable(m) for m in matrices):
        return 0
    return address(dtype)


def usable(x) -> bool:
    """A 2-D aligned view gemm takes as is: row-major or column-major (a transposed view), each
    row (column) apart from the next by at least its length: no negative or overlapping strides."""
    if x.ndim != 2 or not x.flags.aligned:
        return False
    (m, n), (s0, s1), item = x.shape, x.strides, x.itemsize
    return bool(_row_major(m, n, s0, s1, item) or _row_major(n, m, s1, s0, item))
