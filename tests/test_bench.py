"""`npbert bench`'s report, with the measurements (subprocesses, minutes) replaced by canned
records: the table only (JSON lines on request), and a line when Hugging Face is skipped."""
import argparse
import json

import pytest

from npbert.commands.bench import _script


def canned(argv, env_extra, threads, timeout=1800):
    """What each worker prints, as run_worker returns it."""
    kind = argv[1]
    if kind == "matmul":
        return [dict(kind="matmul", matmul_f32_gflops_1024=50.0, matmul_f32_gflops_2048=70.0)]
    if kind == "start":
        return [dict(kind="start", cache=argv[3], seconds=2.0)]
    run = dict(impl=argv[argv.index("--impl") + 1], preset="tiny", vocab=30522, batch=32, seq=128, allocator="glibc",
               page_faults_per_step=0.0, max_rss_mb=600.0, gflops_needed=7.0, gflops_padded=9.0)
    return [dict(run, kind="train", tokens_per_s=1300.0, step_s=3.0, median_step_s=3.1, step_alloc_peak_mb=390.0),
            dict(run, kind="infer", tokens_per_s=3600.0, step_s=1.1, median_step_s=1.2)]


@pytest.fixture
def bench(monkeypatch):
    script = _script()
    monkeypatch.setattr(script, "run_worker", canned)
    import hf                                            # benchmarks/hf.py, on the path the script set
    monkeypatch.setattr(hf, "missing", lambda: ["torch", "transformers"])
    monkeypatch.setattr(hf, "versions", lambda: {})
    import ort                                           # benchmarks/ort.py
    monkeypatch.setattr(ort, "missing", lambda: ["onnx", "onnxruntime"])
    monkeypatch.setattr(ort, "versions", lambda: {})

    def run(*argv):
        p = argparse.ArgumentParser()
        script.add_arguments(p)
        return script.run(p.parse_args(["--quick", "--impls", "numpy,hf", "--allocators", "glibc", *argv]))
    return run


def test_the_report_is_the_table_and_says_why_hugging_face_was_skipped(bench, capsys):
    # before: every measurement's JSON line was printed before the table, and hf vanished silently
    assert bench() == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert not any(line.startswith("{") for line in out)
    assert "hf skipped: it needs torch and transformers, not installed (pip install torch transformers)" in out
    assert any(line.startswith("tiny    30522 glibc      numpy          |        1300") for line in out)
    assert "measuring numpy tiny vocab 30522 glibc" in captured.err              # progress: stderr


def test_quick_measures_one_allocator_and_says_what_each_wait_is(monkeypatch, capsys):
    # before: --quick's help said "2 timed steps" while it ran both allocator settings and the
    # cold-cache start (a minute and a half of compiling) with nothing said about either
    script = _script()
    monkeypatch.setattr(script, "run_worker", canned)
    import hf
    import ort
    monkeypatch.setattr(hf, "missing", lambda: ["torch", "transformers"])
    monkeypatch.setattr(ort, "missing", lambda: ["onnx", "onnxruntime"])
    p = argparse.ArgumentParser()
    script.add_arguments(p)
    assert script.run(p.parse_args(["--quick", "--impls", "numpy,numba"])) == 0
    err = capsys.readouterr().err
    assert "empty kernel cache: every kernel compiles" in err
    assert "[1/2] measuring numpy tiny vocab 30522 glibc-keep: a warm-up step, then 2 timed" in err
    assert "[2/2] measuring numba tiny vocab 30522 glibc-keep" in err and " glibc:" not in err


def test_json_on_request(bench, capsys, tmp_path):
    assert bench("--json") == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]   # JSON lines only
    assert [r["kind"] for r in records] == ["machine", "skipped", "start", "start", "train", "infer", "machine_after"]
    assert bench("--json", str(tmp_path / "b.jsonl")) == 0
    assert "hf skipped" in capsys.readouterr().out                                # the table, and the file
    assert [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()] == records



def test_onnx_runtime_skipped_with_the_reason_and_the_blas_core_named(bench, capsys):
    assert bench("--impls", "numpy,ort") == 0
    out = capsys.readouterr().out.splitlines()
    assert "ort skipped: it needs onnx and onnxruntime, not installed (pip install onnx onnxruntime)" in out
    assert any(line.startswith("OpenBLAS core type: ") for line in out)       # which kernels the BLAS ran


def test_the_benchmark_counts_the_matmuls_the_model_does(monkeypatch):
    # FLOPs, GFLOP/s and the "matmuls" ceiling come from workload.forward_matmuls: it must list
    # what pretraining_forward really multiplies (a layer added to the model and not here would
    # flatter every GFLOP/s figure), and the ceiling's train step must do 3x those FLOPs.
    import collections

    import numpy as np

    _script()
    import workload                                      # benchmarks/workload.py, on the path _script set

    from npbert import backend
    from npbert.config import BertConfig
    from npbert.model import init_params, pretraining_forward

    config = BertConfig(vocab_size=97, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                        intermediate_size=40, max_position_embeddings=16)
    batch = workload.make_batch(config, B=3, T=16)
    masked = len(batch["mlm_positions"])
    seen = collections.Counter()                         # (batch, m, k, n) -> products

    def linear(f):
        def spy(x, w, *rest):
            seen[(1, x.size // x.shape[-1], x.shape[-1], w.shape[0])] += 1
            return f(x, w, *rest)
        return spy

    def attention(f):
        def spy(q, k, v, *rest):
            B, heads, T, d = q.shape
            seen[(B * heads, T, d, T)] += 1              # scores q k^T
            seen[(B * heads, T, T, d)] += 1              # context p v
            return f(q, k, v, *rest)
        return spy

    with backend.use_backend("numpy"):
        for name, spy in (("linear_forward", linear), ("linear_gelu_forward", linear),
                          ("attention_core_forward", attention)):
            monkeypatch.setattr(backend, name, spy(getattr(backend, name)))
        pretraining_forward(init_params(config, np.random.default_rng(0)), config, **batch)
    listed = collections.Counter()
    for _, count, b, m, k, n in workload.forward_matmuls(config, 3, masked, T=16):
        listed[(b, m, k, n)] += count
    assert listed == seen

    products = []
    monkeypatch.setattr(np, "matmul", lambda a, b, out: products.append((a.shape, b.shape)))
    train, infer = workload.matmul_steps(config, 3, masked, T=16)
    train()
    assert sum(2 * np.prod(a) * b[-1] for a, b in products) == workload.train_flops(config, 3, masked, T=16)
    products.clear()
    infer()
    assert sum(2 * np.prod(a) * b[-1] for a, b in products) == workload.forward_flops(config, 3, masked, T=16)


def test_the_ceilings_are_rows_and_each_ratio_is_printed_once(bench, capsys):
    # npbert's share of each ceiling has its own lines (not "numba vs matmuls" among the peers);
    # the ceilings' own block compares them with the other implementations only, and is left out
    # when there are none (not an empty header)
    assert bench("--impls", "numba,matmuls,matmuls-needed") == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("tiny    30522 glibc      matmuls        |") for line in out)
    assert any(line.startswith("tiny    30522 glibc      matmuls-needed |") for line in out)
    assert ("  tiny 30522 numba[glibc]: padded ceiling (matmuls[glibc]) 1.00 / 1.00, "
            "needed ceiling (matmuls-needed[glibc]) 1.00 / 1.00") in out
    assert not any(line.startswith("numba's speed-up") or line.startswith("each ceiling") for line in out)
    assert not any("vs matmuls" in line or "matmuls[glibc] vs" in line for line in out)
    assert any(line.startswith("GFLOP/s: the matmul FLOPs of the needed work") for line in out)
