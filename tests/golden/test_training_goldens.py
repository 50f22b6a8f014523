"""The training goldens: npbert's own steps reproduce them, each case records its recipe,
each deliberately broken optimizer is located at its step and quantity, a port that rounds
otherwise gets the same verdicts, and docs/porting.md's training table is what they produce."""
import os

import numpy as np
import pytest

from npbert import safetensors
from npbert.golden import conform, schema
from support import broken_ports
from support.goldens import VERDICT, conform_case, copy_results, edited_golden
from support.paths import ROOT



def test_npbert_own_training_step_reproduces_the_training_goldens(golden, own_results):
    reports = conform.conform(golden, own_results, only=["train*"])
    assert len(reports) == 12 and all(r.passed for r in reports)
    assert all(row.rel == 0.0 for r in reports for row in r.rows), "the same code, dtype and machine: equal"


def test_training_cases_record_the_recipe_and_what_it_must_show(golden):
    from npbert.golden.training import RECIPE
    cases = [c for c in schema.read_manifest(golden)["cases"] if c["kind"] == "training"]
    assert sorted(c["name"] for c in cases) == sorted(2 * [
        f"train[{m},{b}]" for m in ("pretraining", "sequence_classification")
        for b in ("bias_correction", "no_bias_correction", "dropout")])
    clipped = []
    for c in cases:
        roles = {t["name"]: t["role"] for t in c["tensors"]}
        assert {roles[k] for k in ("loss", "grad_norm", "lr")} == {"step"}
        assert roles["trained/" + broken_ports.WORD] == roles["m/" + broken_ports.WORD] == "final"
        assert c["constants"]["bias_correction"] == ("no_bias" not in c["name"])
        assert isinstance(c["constants"]["dropout"], dict) == ("dropout" in c["name"])
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
    results = copy_results(own_results, tmp_path)
    path = os.path.join(results, "float64", "train[pretraining,bias_correction].safetensors")
    tensors = {k: v for k, v in safetensors.load_file(path).items() if not k.startswith("steps/")}
    tensors["lr"] = tensors["lr"].copy()
    tensors["lr"][2] *= 1.5
    safetensors.save_file(tensors, path)
    report = conform_case(golden, results, "float64/train[pretraining,bias_correction]")
    assert report.verdict() == "FAIL: first differs at `lr` (step 3): learning rate 0.015, expected 0.01; " \
                               "check the schedule"
    tensors["lr"][2] /= 1.5
    tensors["m/bert.pooler.dense.bias"] = tensors["m/bert.pooler.dense.bias"] * 2
    safetensors.save_file(tensors, path)
    m = VERDICT.fullmatch(conform_case(golden, results, "float64/train[pretraining,bias_correction]").verdict())
    assert (m["name"], m["where"]) == ("m/bert.pooler.dense.bias", "after step 5")
    tensors["grad_norm"] = tensors["grad_norm"] * 2     # a golden whose constants were emptied: no guess, no error
    safetensors.save_file(tensors, path)
    def empty_constants(manifest):
        for c in manifest["cases"]:
            if c["kind"] == "training":
                c["constants"] = {}
    edited = edited_golden(golden, tmp_path, empty_constants)
    assert conform_case(edited, results, "float64/train[pretraining,bias_correction]").verdict() == \
        "FAIL: first differs at `grad_norm` (step 1): gradient norm before clipping {:.6g}, expected {:.6g}".format(
            tensors["grad_norm"][0], tensors["grad_norm"][0] / 2)


def test_every_verdict_matches_one_pattern(broken, broken_optimizers, golden, own_results, tmp_path):
    verdicts = [r.verdict() for reports in (*broken.values(), *broken_optimizers.values()) for r in reports]
    results = copy_results(own_results, tmp_path)        # a failure only in a parameter gradient
    path = os.path.join(results, "float64", "bert_for_pretraining")
    np.save(os.path.join(path, "grad", "cls.predictions.bias.npy"),
            np.load(os.path.join(path, "grad", "cls.predictions.bias.npy")) * 2)
    only_grad = conform_case(golden, results, "float64/bert_for_pretraining").verdict()
    assert only_grad.startswith("FAIL: first differs at `grad/cls.predictions.bias` (gradient): ") and \
        "every intermediate given matches" in only_grad
    assert all(VERDICT.fullmatch(v) for v in verdicts + [only_grad]), [v for v in verdicts if not VERDICT.fullmatch(v)]


def test_porting_guide_training_table_is_what_the_broken_optimizers_produce(broken_optimizers):
    page = open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8").read()
    table = broken_ports.training_symptoms_table(broken_optimizers)
    assert table in page, "regenerate the table in docs/porting.md: python tests/support/broken_ports.py\n" + table


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
