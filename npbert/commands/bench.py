"""`npbert bench`: run benchmarks/bench.py (training and inference tokens/s per backend, next
to Hugging Face on PyTorch when installed). The benchmark lives beside the package, not in
it, because it may import torch; so this needs a source checkout."""
import importlib.util
import os

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "benchmarks", "bench.py")


def _script():
    if not os.path.exists(SCRIPT):
        return None
    spec = importlib.util.spec_from_file_location("npbert_bench_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def register(sub):
    p = sub.add_parser("bench", help="benchmark the backends (and Hugging Face on PyTorch, if installed)",
                       description="Measure a training step's and an inference forward's tokens/s and GFLOP/s "
                                   "for both backends, next to Hugging Face on PyTorch and ONNX Runtime when they "
                                   "are installed, with the machine's own matmul GFLOP/s and two ceilings (the "
                                   "step's matmuls alone, at every position and at the needed ones), time per part "
                                   "and memory. A full run takes a few minutes; --quick one. Each figure is the "
                                   "best of --steps timed steps (docs/performance.md).")
    script = _script()
    if script is not None:
        script.add_arguments(p)                        # the script's own options, defined once there
    p.set_defaults(func=lambda args: run(args, script))


def run(args, script):
    from npbert.errors import NpbertError
    if script is None:
        raise NpbertError(f"npbert bench needs a source checkout: {SCRIPT} not found")
    return script.run(args)
