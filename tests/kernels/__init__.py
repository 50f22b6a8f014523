"""The numba backend (npbert/kernels) held to the NumPy reference: each kernel, the whole model, the
matmuls and threads, the switch between backends, the kernel cache and the memory allocator."""
