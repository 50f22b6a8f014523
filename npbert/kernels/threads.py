"""Parallel loops for the kernels: a nogil Numba kernel(lo, hi, ...) run on contiguous parts of
a range, one part per thread, by Numba's parallel backend (OpenMP where the machine has it).

Why a compiled driver per kernel, not a Python thread pool: handing a part to a sleeping
Python thread and getting the GIL back costs 230-350 us on these machines (measured: a pool
of concurrent.futures running an empty kernel), more than most kernels take, so two threads
were barely faster than one. A `prange` loop over the parts starts OpenMP's threads, which
wait spinning for a moment after each loop, in 5-8 us (26 us after 2 ms idle), and never
touch the GIL. The driver, `_parallel_calls` below, calls the kernel through the address of
its compiled code (`_call_at`), not by name: Numba links a callee's code into its caller and
optimises and compiles it again there, so a driver per kernel that named it cost about as much
again as the kernel itself (~1-3 s each, 14 s of a 2-thread cold start at tiny; benchmarks/
cold_start.py). Through an address the driver is compiled once per argument types, without the
kernel's code, and is cached as any other (the address is an argument: it changes between
processes).

While a loop runs, BLAS runs one thread (kernels/blas.py): the matmuls are split over these
same threads (kernels/matmul.py, kernels/gemm.py), and OpenBLAS's own workers would
otherwise compete with them for the cores and spin between calls.

An elementwise kernel should loop over views x[lo:hi] with range(x.size), not over
range(lo, hi): Numba cannot prove lo >= 0, so every x[i] keeps a negative-index check and
LLVM leaves the loop scalar or half-vectorised (float32 GELU: 10.4 ms -> 3.4 ms for 2M
elements, measured; row kernels are unaffected, their inner loops start at 0).

A process forked after a loop ran on several threads runs its loops on one thread: GNU OpenMP
does not survive fork() (use the "spawn" or "forkserver" start method for more in the child).

Between loops the worker sleeps (OMP_WAIT_POLICY=PASSIVE, set here unless the environment sets
it to active or passive): GNU OpenMP's default is to spin ~3 ms after each loop first, which on a
busy machine takes a core from the jobs beside it and from npbert's own main thread.
GOMP_SPINCOUNT=300000 gives GNU OpenMP's spin back; OMP_WAIT_POLICY=ACTIVE spins without end. What
each costs and gains, quiet and busy: docs/performance.md, "Two threads" (benchmarks/busy_threads.py).

The parts are the same for a given thread count whatever the scheduling (part p is always
[n p / parts, n (p + 1) / parts), or the same split by cost), so results depend on the thread
count only where a kernel says so. The thread count is the CPUs this process may use, or NPBERT_NUM_THREADS
if fewer (npbert/environment.py).
"""
import os

import numba
import numpy as np
from numba import njit, prange, types
from numba._dispatcher import compute_fingerprint
from llvmlite import ir
from numba.core import cgutils
from numba.core.callconv import excinfo_t
from numba.extending import intrinsic

from npbert.environment import kernel_threads
from npbert.errors import NpbertError
from npbert.kernels import blas

PRANGE_ONLY = {"prange": True, **dict.fromkeys(("comprehension", "reduction", "inplace_binop", "setitem",
                                               "numpy", "stencil", "fusion"), False)}   # the driver has no other parfor
if not os.environ.get("OMP_WAIT_POLICY", "").strip():  # unset or empty (npbert/environment.py's rule)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"          # read when Numba first starts its threads, after this
_addresses = {}                  # (kernel, argument fingerprints) -> its compiled code's address
_ran_parallel = False            # a driver has run in this process
_forked = False                  # this process is a fork() of one where a driver had run


def _after_fork_in_child():
    # GNU OpenMP cannot run in a child forked after it started (Numba ends such a child:
    # "fork() called from a process already using GNU OpenMP"), so the child runs serially
    global _forked
    _forked = _forked or _ran_parallel


os.register_at_fork(after_in_child=_after_fork_in_child)


def num_threads() -> int:
    if _forked:
        return 1
    return max(1, min(kernel_threads(), numba.config.NUMBA_NUM_THREADS))


@intrinsic
def _call_at(typingctx, address, lo, hi, args):
    """kernel(lo, hi, *args), the kernel compiled at `address` (its Numba-ABI function for these
    argument types: _kernel_address); a raised error propagates as from a direct call."""
    arg_types = (lo, hi, *args.types)

    def codegen(context, builder, signature, values):
        address, lo, hi, packed = values
        call_conv = context.call_conv
        function_type = call_conv.get_function_type(types.none, arg_types)
        function = builder.inttoptr(address, function_type.as_pointer())
        unpacked = [lo, hi] + [builder.extract_value(packed, i) for i in range(len(args.types))]
        # call_conv.call_function's steps (it reads the type off a declared function, not a pointer)
        return_type = call_conv.get_return_type(types.none).pointee
        returned = cgutils.alloca_once(builder, return_type)
        builder.store(cgutils.get_null_value(return_type), returned)
        excinfo = cgutils.alloca_once(builder, ir.PointerType(excinfo_t))
        code = builder.call(function, [returned, excinfo,
                                       *call_conv._get_arg_packer(arg_types).as_arguments(builder, unpacked)])
        status = call_conv._get_return_status(builder, code, builder.load(excinfo))
        with cgutils.if_unlikely(builder, status.is_error):
            call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()

    return types.void(address, lo, hi, args), codegen


@njit(parallel=PRANGE_ONLY, cache=True)
def _parallel_calls(bounds, address, *args):
    for p in prange(len(bounds) - 1):
        _call_at(address, bounds[p], bounds[p + 1], args)


def _kernel_address(kernel, args) -> int:
    """The address of kernel's compiled code for (int64, int64, *args)' types, compiled (or loaded
    from the cache) the first time; keyed by Numba's fingerprint of the arguments' types."""
    key = (kernel, compute_fingerprint(args))         # one C call for the tuple: ~0.3 us (per argument: 10x)
    address = _addresses.get(key)
    if address is None:
        signature = (types.int64, types.int64, *map(kernel.typeof_pyval, args))
        compiled = kernel.get_compile_result(types.void(*signature))
        address = _addresses[key] = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
    return address


def numba_threads() -> int:
    """numba.get_num_threads(), which starts Numba's threading layer the first time: a layer
    NUMBA_THREADING_LAYER names but this machine lacks (tbb) is one line, not Numba's ValueError."""
    try:
        return numba.get_num_threads()
    except ValueError as e:
        if "threading layer" not in str(e):
            raise
        hint = " ".join(str(e).split())
        raise NpbertError(f"Numba cannot start its threads ({hint}); unset NUMBA_THREADING_LAYER, or run on one "
                          "thread (NPBERT_NUM_THREADS=1)") from None


def part_bounds(n, parts, cost=None):
    """(parts + 1,) int64 bounds splitting [0, n) into `parts` contiguous parts: of equal size,
    or of about equal total cost (cost: (n,) the items' costs)."""
    if cost is None:
        return np.arange(parts + 1, dtype=np.int64) * n // parts
    total = np.concatenate([[0], np.cumsum(cost, dtype=np.float64)])             # (n + 1,)
    inner = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts)      # (parts - 1,)
    return np.concatenate([[0], inner, [n]]).astype(np.int64)


def parallel_for(kernel, n, *args, grain=1, cost=None):
    """kernel(lo, hi, *args) over [0, n) split in parts of at least `grain` items (of about
    equal `cost` when given: (n,) per item), one part per thread. kernel must be njit(nogil=True)."""
    threads = num_threads()
    parts = max(1, min(threads, n // max(grain, 1)))
    if threads == 1:
        kernel(0, n, *args)
        return
    with blas.single_threaded():
        if parts == 1:
            kernel(0, n, *args)
        else:
            if numba_threads() != parts:
                numba.set_num_threads(parts)
            global _ran_parallel
            _ran_parallel = True
            _parallel_calls(part_bounds(n, parts, cost), _kernel_address(kernel, args), *args)
