"""Hostile goldens and results for `npbert conform` and `npbert golden`: one line, exit 2,
nothing read outside the directories given, no hang on a FIFO or a huge claimed shape, nothing
replaced that npbert did not write."""
import json
import os
import resource
import shutil
import subprocess

import numpy as np
import pytest

from npbert import safetensors
from npbert.cli import main
from npbert.golden import conform, schema
from support.hostile import NPBERT, env, run_on_full_disk, run_unwritable
from support.patience import call_beside_fifos
from support.goldens import conform_case, copy_results, edited_golden


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
    other = edited_golden(golden, tmp_path, edit)
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
    _one_line_error(capsys, ["conform", edited_golden(golden, tmp_path, edit), own_results], "manifest")


def test_conform_refuses_a_golden_file_without_a_listed_tensor(golden, own_results, tmp_path, capsys):
    other = edited_golden(golden, tmp_path, lambda m: None)
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
    report = conform.conform(edited_golden(golden, tmp_path, edit), own_results, only=["float64/mse"])[0]
    assert not report.passed and "no tensor" in report.verdict()


def test_a_npy_claiming_a_huge_shape_or_a_fifo_is_refused_without_reading_it(golden, own_results, tmp_path, capsys):
    results = copy_results(own_results, tmp_path)
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
    results = copy_results(own_results, tmp_path)
    folder = os.path.join(results, "float64", "bert_for_pretraining")
    os.rename(os.path.join(folder, "bert.encoder.layer.0.attention.self.probs.npy"),
              os.path.join(folder, "bert.encoder.layer.0.attention.self.prob.npy"))
    report = conform_case(golden, results, "float64/bert_for_pretraining")
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
