"""`npbert bench`'s report, with the measurements (subprocesses, minutes) replaced by canned
records: the table only (JSON lines on request), and a line when Hugging Face is skipped."""
import argparse
import json
import re

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
    run.script = script
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


def test_a_json_file_that_cannot_be_written_is_one_line_after_the_table(bench, monkeypatch, capsys):
    # before: `npbert bench --json /dev/full` ended in an ENOSPC traceback, and the table was never shown
    from npbert.cli import main
    monkeypatch.setattr("npbert.commands.bench._script", lambda: bench.script)
    assert main(["bench", "--quick", "--impls", "numpy,hf", "--allocators", "glibc", "--json", "/dev/full"]) == 2
    captured = capsys.readouterr()
    assert "hf skipped: it needs torch and transformers" in captured.out
    assert captured.err.splitlines()[-1] == "npbert bench: error: /dev/full: No space left on device"


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
    from npbert.model import pretraining_forward
    from npbert.model_params import init_params

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


# --- the needed work: what a step that computes only what the loss reads multiplies -------------

def _workload():
    _script()
    import workload                                      # benchmarks/workload.py, on the path _script set
    return workload


def small_config(**kw):
    from npbert.config import BertConfig
    return BertConfig(**dict(dict(vocab_size=97, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                  intermediate_size=40, max_position_embeddings=16), **kw))


def test_the_needed_work_is_the_padded_work_when_nothing_is_padded_and_every_row_is_read():
    import numpy as np
    workload = _workload()
    config = small_config()
    B, T = 3, 16
    mask = np.ones((B, T), np.int64)
    positions = np.array([b * T + t for b in range(B) for t in range(1, T)])     # every row but [CLS]: read anyway
    assert (workload.read_rows(mask, positions) == T).all()
    assert workload.needed_forward_flops(config, mask, positions) == workload.forward_flops(config, B, len(positions), T)
    assert workload.needed_train_flops(config, mask, positions) == workload.train_flops(config, B, len(positions), T)


def test_the_needed_work_is_less_with_padding_or_fewer_rows_read():
    workload = _workload()
    config = small_config()
    for padded in (False, True):                         # full length: only the last layer's rows are saved
        batch = workload.make_batch(config, B=3, T=16, padded=padded)
        needed = workload.needed_forward_flops(config, batch["attention_mask"], batch["mlm_positions"])
        assert needed < workload.forward_flops(config, 3, len(batch["mlm_positions"]), T=16)


def test_the_needed_work_of_a_small_batch_counted_by_hand():
    # H 4, 2 heads (d 2), I 8, 2 layers, V 10; lengths 4 and 2; one masked position each (so
    # R_s = 2: it and [CLS]): N = 6 real tokens, R = 4 rows read, 2 masked
    import numpy as np
    workload = _workload()
    config = small_config(vocab_size=10, hidden_size=4, num_attention_heads=2, intermediate_size=8)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
    positions = np.array([2, 5])                         # (0, 2) and (1, 1), flat into B*T
    assert workload.read_rows(mask, positions).tolist() == [2, 2]
    layer0 = 2 * 6 * 4 * 4 * 4 + 2 * 6 * 4 * 8 * 2      # q, k, v, output at N; FFN up and down at N
    layer0 += 2 * 4 * 2 * (4 * 4 + 2 * 2)                # 2 heads: scores + context, 2 n d n each, n = 4 and 2
    last = 2 * 2 * 6 * 4 * 4                             # k, v at N
    last += 2 * 2 * 4 * 4 * 4 + 2 * 4 * 4 * 8 * 2       # q, output, FFN up and down at R
    last += 2 * 4 * 2 * (2 * 4 + 2 * 2)                  # 2 heads: scores + context, 2 R_s d n_s each
    heads = 2 * 2 * 4 * 4 + 2 * 2 * 4 * 4 + 2 * 2 * 4 * 10 + 2 * 2 * 4 * 2   # pooler, MLM transform, decoder, NSP
    assert layer0 + last + heads == 3520
    assert workload.needed_forward_flops(config, mask, positions) == 3520


def test_the_needed_ceiling_does_the_needed_work(monkeypatch):
    import numpy as np
    workload = _workload()
    config = small_config()
    batch = workload.make_batch(config, B=4, T=16, padded=True)
    mask, positions = batch["attention_mask"], batch["mlm_positions"]
    products = []
    monkeypatch.setattr(np, "matmul", lambda a, b, out: products.append((a.shape, b.shape)))
    train, infer = workload.needed_matmul_steps(config, mask, positions)
    train()
    assert sum(2 * np.prod(a) * b[-1] for a, b in products) == workload.needed_train_flops(config, mask, positions)
    products.clear()
    infer()
    assert sum(2 * np.prod(a) * b[-1] for a, b in products) == workload.needed_forward_flops(config, mask, positions)


def test_npbert_impl_names_pick_the_backend_and_the_step():
    workload = _workload()
    assert workload.npbert_impl("numba-padded") == ("numba", False)
    assert workload.npbert_impl("numpy-padded") == ("numpy", False)
    assert workload.npbert_impl("numba") == ("numba", True)
    with pytest.raises(ValueError, match="not an npbert impl"):
        workload.npbert_impl("numba-packed")


def test_the_padded_training_step_runs():
    from npbert import backend
    workload = _workload()
    config = small_config()
    batch = workload.make_batch(config, B=2, T=16, padded=True)
    with backend.use_backend("numpy"):
        train, infer, _ = workload.npbert_steps(config, batch, packed=False)
        assert train() > 0 and infer() > 0


# --- --batches: real prepared data ---------------------------------------------------------------

def test_builtin_batches_are_prepared_data_with_their_fill(tmp_path):
    import numpy as np
    workload = _workload()
    directory = workload.prepare_data("builtin", str(tmp_path / "builtin"), max_documents=40)
    for vocab in (8192, 100):                            # 100: fewer than the data's 624 tokens, ids taken modulo
        batch, info = workload.data_batch(small_config(vocab_size=vocab, max_position_embeddings=64), directory, 8)
        B, T = batch["input_ids"].shape
        assert B == 8 and T == info["batch_T"] <= info["max_seq_length"] == 64 and info["data_vocab"] == 624
        assert info["real_tokens"] == batch["attention_mask"].sum() and info["fill"] == info["real_tokens"] / (B * T)
        assert 0 < info["fill"] <= 1 and 0 < info["split_fill"] <= 1
        assert batch["attention_mask"][:, 0].all() and batch["attention_mask"].sum(1).max() == T   # trimmed to the longest
        assert batch["input_ids"].max() < vocab and batch["mlm_labels"].max() < vocab
        assert np.all(batch["mlm_positions"] % T > 0)   # [CLS] never masked: read_rows counts it once


def test_bench_batches_builtin_prepares_once_and_tells_every_worker(monkeypatch, capsys):
    script = _script()
    import workload
    import hf
    import ort
    calls, argvs = [], []
    monkeypatch.setattr(workload, "prepare_data", lambda source, directory: calls.append(source) or directory)
    monkeypatch.setattr(script, "run_worker", lambda argv, *a, **k: argvs.append(argv) or canned(argv, *a, **k))
    monkeypatch.setattr(hf, "missing", lambda: ["torch", "transformers"])
    monkeypatch.setattr(ort, "missing", lambda: ["onnx", "onnxruntime"])
    p = argparse.ArgumentParser()
    script.add_arguments(p)
    assert script.run(p.parse_args(["--quick", "--impls", "numba-padded,matmuls-needed", "--batches", "builtin"])) == 0
    assert calls == ["builtin"]
    runs = [a for a in argvs if a[1] == "run"]
    assert len(runs) == 2 and all(a[a.index("--batches") + 1] == "builtin" and "--data-dir" in a for a in runs)
    assert "batches: the first of the builtin corpus prepared as npbert pretrain does" in capsys.readouterr().out
    for bad in (["--seq", "64"], ["--padded"]):
        with pytest.raises(SystemExit) as e:
            script.main(["--batches", "builtin", *bad])
        assert e.value.code == 2
        assert f"{bad[0]} shapes random batches; --batches builtin has the data's own lengths" in capsys.readouterr().err


def test_ab_refuses_random_batch_options_with_real_batches_and_unknown_impls(capsys):
    from support.scripts import load_script
    ab = load_script("benchmarks/ab.py", "npbert_ab_script")
    for argv, message in ((["--batches", "imdb", "--seq", "64"], "--batches imdb has the data's own lengths"),
                          (["--impls", "numba,numba-packed"], "unknown impl numba-packed"),
                          (["--threads", "2", "--pause", "-1"], "--pause -1.0: seconds in [0, 60]")):
        with pytest.raises(SystemExit) as e:
            ab.main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err


def test_profile_step_runs_a_real_step_and_names_where_its_time_goes(capsys, monkeypatch):
    from npbert import backend
    from support.scripts import load_script
    script = load_script("benchmarks/profile_step.py", "npbert_profile_step_script")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NPBERT_NUM_THREADS"):
        monkeypatch.setenv(var, "1")                                  # restored after: main sets them
    with backend.use_backend(backend.get_backend()):                  # main selects numba
        assert script.main(["--preset", "tiny", "--vocab", "1000", "--kind", "infer", "--padded", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "tiny / 1,000, infer, 1 thread(s)" in out and "needed ceiling" in out
    assert "decoder_cross_entropy_forward" in out and "linear_forward" in out and "other (Python" in out
    assert re.search(r"needed ceiling [\d.]+ ms \(share [\d.]+, \d+ GFLOP/s of [\d.]+ GFLOP\)", out)
    assert re.search(r"packed_attention_forward +[\d.]+ ms +\d+ GFLOP/s", out)   # inference ops: their rate
    with pytest.raises(SystemExit) as e:
        script.main(["--threads", "0"])
    assert e.value.code == 2


def test_speed_tables_plan_every_cell_and_mark_each_miss(capsys, tmp_path):
    from support.scripts import load_script
    tables = load_script("benchmarks/speed_tables.py", "npbert_speed_tables_script")
    plan = tables.measurements(["train", "real", "infer"], [1, 2], ["tiny", "mini", "small"])
    assert len(plan) == 2 * 6 * (1 + 2 + 2)                       # threads x cells x (random; builtin, imdb; full, random)
    assert {tuple(a[a.index("--preset") + 1:a.index("--preset") + 4:2]) for _, _, a in plan} == {
        (p, str(v)) for p, v in tables.CELLS}

    def record(table, label, impl, step, **more):
        return dict(kind="ab_infer" if table == "infer" else "ab_train", table=table, label=label, threads=1,
                    preset="tiny", vocab=8192, impl=impl, min_step_s=step, batches="random", fill=0.6,
                    matmul_2048_gflops=100.0, **more)
    records = [record("train", "random", "numba", 1.0, share_of_needed_ceiling=0.9, share_of_matmul_needed=0.8),
               record("train", "random", "numba-padded", 1.5), record("train", "random", "hf-masked", 1.7),
               record("train", "random", "matmuls-needed", 0.85),
               record("infer", "full", "numba", 1.0), record("infer", "full", "ort", 1.3),
               record("infer", "random", "numba", 1.0), record("infer", "random", "ort", 1.4)]
    saved = tmp_path / "records.jsonl"
    saved.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert tables.main(["--from", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "| 1 thread | - | **1.70x** (miss) (1.13) | - |" in out          # 1.7 < 1.8
    assert "| 1 thread | - | 0.90 / 0.80 | - |" in out                       # 0.9 >= 0.85
    assert "| 1 thread | - | 2.00x | - |" in out                             # hf-masked over the needed ceiling
    assert "| 1 thread, full | - | 1.30x | - |" in out and "| 1 thread, random | - | **1.40x** (miss) | - |" in out
    with pytest.raises(SystemExit) as e:
        tables.main(["--tables", "speed"])
    assert e.value.code == 2 and "unknown or out of range: speed" in capsys.readouterr().err


def test_the_needed_work_is_what_the_packed_step_multiplies(monkeypatch):
    # the needed ceiling and GFLOP/s count workload.needed_matmuls: it must be what the packed
    # step computes
    import numpy as np
    workload = _workload()
    from npbert import backend
    from npbert.model import pretraining_forward
    from npbert.model_params import init_params

    config = small_config()
    batch = workload.make_batch(config, B=3, T=16, padded=True)
    flops = []

    def linear(f):
        def spy(x, w, *rest, **kw):
            flops.append(2 * x.size * w.shape[0])        # (rows, k) @ (k, n)
            return f(x, w, *rest, **kw)
        return spy

    def attention(f):
        def spy(q, k, v, layout, num_heads, *rest):
            d = q.shape[1] // num_heads                  # scores + context: 2 m d n each, per head
            flops.append(4 * num_heads * d * int((layout.q_lengths * layout.k_lengths).sum()))
            return f(q, k, v, layout, num_heads, *rest)
        return spy

    with backend.use_backend("numpy"):
        for name, spy in (("linear_forward", linear), ("linear_gelu_forward", linear),
                          ("decoder_cross_entropy_forward", linear),       # the MLM decoder, fused with its loss
                          ("packed_attention_forward", attention)):
            monkeypatch.setattr(backend, name, spy(getattr(backend, name)))
        pretraining_forward(init_params(config, np.random.default_rng(0)), config, **batch, packed=True)
    assert sum(flops) == workload.needed_forward_flops(config, batch["attention_mask"], batch["mlm_positions"])
