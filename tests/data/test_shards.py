"""Shards, manifest, resumable preparation, and the batch reader (no tokenizer involved)."""
import json
import os
import re

import numpy as np
import pytest

from npbert.data import prepare as prep
from npbert.data.instances import Instance
from npbert.data.pretraining_data import PretrainingData, make_batch
from npbert.data.shards import MANIFEST, VOCAB_FILE, pack_instances, read_shard
from npbert.data.statistics import count_shard, format_report, length_histogram
from npbert.errors import DataError
from support.shard_corpus import CLS, MASK, PAD, SEP, TOKENS, documents, options, write
from support.shard_reader_doc import load_reader, reader_code

def files(directory):
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    directory = tmp_path_factory.mktemp("prepared")
    write(directory)
    return directory


def unmasked_rows(arrays):
    """input_ids with the masked positions given back their original ids."""
    ids = arrays["input_ids"].astype(np.int64)
    for r in range(len(ids)):
        k = arrays["num_masked"][r]
        ids[r, arrays["masked_lm_positions"][r, :k]] = arrays["masked_lm_ids"][r, :k]
    return ids


def test_layout_and_manifest(prepared):
    names = os.listdir(prepared)
    manifest = json.load(open(prepared / MANIFEST))
    assert VOCAB_FILE in names and manifest["complete"]
    assert open(prepared / VOCAB_FILE, encoding="utf-8").read().split("\n")[:-1] == TOKENS
    assert manifest["vocab_size"] == len(TOKENS)
    assert manifest["special_ids"] == dict(pad=PAD, unk=401, cls=CLS, sep=SEP, mask=MASK)
    train, held = manifest["splits"]["train"], manifest["splits"]["heldout"]
    assert (train["documents"], held["documents"]) == (36, 4)
    assert len(train["shards"]) > 1                     # tokens_per_shard=700 splits the work
    for split in (train, held):
        assert sum(s["instances"] for s in split["shards"]) == split["counts"]["instances"] > 0
        for shard in split["shards"]:
            assert shard["file"] in names
    arrays = read_shard(prepared / train["shards"][0]["file"])
    assert arrays["input_ids"].dtype == np.uint16 and arrays["token_type_ids"].dtype == np.int8
    assert arrays["masked_lm_positions"].dtype == np.int16 and arrays["next_sentence_labels"].dtype == np.int8
    assert arrays["input_ids"].shape[1] == 32 and arrays["masked_lm_positions"].shape[1] == 5


def test_shard_rows_are_well_formed(prepared):
    data = PretrainingData(prepared)
    a = data.arrays
    ids = unmasked_rows(a)
    for r in range(len(ids)):
        n = a["lengths"][r]
        row, types = ids[r], a["token_type_ids"][r]
        seps = np.flatnonzero(row[:n] == SEP)
        assert row[0] == CLS and len(seps) == 2 and seps[1] == n - 1 and (row[n:] == PAD).all()
        assert (types[:seps[0] + 1] == 0).all() and (types[seps[0] + 1:n] == 1).all() and (types[n:] == 0).all()
        k = a["num_masked"][r]
        positions = a["masked_lm_positions"][r, :k]
        assert k >= 1 and (np.diff(positions) > 0).all() and not np.isin(positions, [0, *seps]).any()
        assert (a["masked_lm_positions"][r, k:] == 0).all()


def test_heldout_documents_never_reach_training(prepared):
    doc_of = lambda arrays: {int(t) // 10 for row in unmasked_rows(arrays) for t in row if t < 400}
    train, held = doc_of(PretrainingData(prepared).arrays), doc_of(PretrainingData(prepared, "heldout").arrays)
    assert len(held) == 4 and train.isdisjoint(held) and len(train) == 36


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, prepared):
    write(tmp_path / "again")
    assert files(tmp_path / "again") == files(prepared)
    write(tmp_path / "other", seed=8)
    assert files(tmp_path / "other") != files(prepared)


class Crash(Exception):
    pass


def test_an_interrupted_run_resumes_to_the_same_bytes(tmp_path, prepared, monkeypatch):
    real_write, written = prep.write_shard, []

    def crash_after_two(path, arrays):
        if len(written) == 2:
            raise Crash()
        real_write(path, arrays)
        written.append(path)
    monkeypatch.setattr(prep, "write_shard", crash_after_two)
    with pytest.raises(Crash):
        write(tmp_path)
    monkeypatch.setattr(prep, "write_shard", real_write)
    assert not json.load(open(tmp_path / MANIFEST))["complete"]
    assert not [n for n in os.listdir(tmp_path) if ".tmp" in n]      # no half-written file left
    with pytest.raises(DataError, match="not prepared to the end"):
        PretrainingData(tmp_path)
    log = []
    prep.write_pretraining_data(str(tmp_path), documents(), TOKENS, options(), log=log.append)
    assert sum("kept" in line for line in log) == 2
    assert files(tmp_path) == files(prepared)


def test_a_deleted_shard_is_made_again(tmp_path, prepared):
    write(tmp_path)
    manifest = json.load(open(tmp_path / MANIFEST))
    last = manifest["splits"]["train"]["shards"][-1]["file"]
    os.remove(tmp_path / last)
    with pytest.raises(DataError, match="missing"):
        PretrainingData(tmp_path)
    write(tmp_path)
    assert files(tmp_path) == files(prepared)


def test_other_options_in_the_same_directory_are_an_error(prepared):
    with pytest.raises(DataError, match=r"max_seq_length=32 \(now 64\)"):
        write(prepared, max_seq_length=64)


def test_too_few_documents(tmp_path):
    with pytest.raises(DataError, match="needs at least 2") as error:
        write(tmp_path / "one", documents(1), heldout_fraction=0.0)
    assert "heldout-fraction" not in str(error.value)           # holding none out would not help
    with pytest.raises(DataError, match="heldout-fraction 0"):
        write(tmp_path / "three", documents(3))
    needs_four = r"needs at least 4 \(2 to train, 2 held out\), because .*: give more text"
    with pytest.raises(DataError, match=needs_four) as error:
        write(tmp_path / "one-held", documents(1))
    assert "heldout-fraction" not in str(error.value)
    assert not any((tmp_path / d).exists() for d in ("one", "three", "one-held"))   # a refusal writes nothing
    manifest = write(tmp_path / "two", documents(2), heldout_fraction=0.0)
    assert list(manifest["splits"]) == ["train"]


def test_batches_are_model_ready(prepared):
    data = PretrainingData(prepared)
    a = data.arrays
    order = data.order(seed=3, epoch=0)
    for k, batch in enumerate(data.batches(8, seed=3)):
        rows = order[8 * k:8 * (k + 1)]
        B, T = batch["input_ids"].shape
        assert B == len(rows) and T == a["lengths"][rows].max()          # trimmed to the longest row
        assert all(v.dtype == np.int64 for v in batch.values())
        assert (batch["attention_mask"].sum(1) == a["lengths"][rows]).all()
        assert (batch["input_ids"] == a["input_ids"][rows, :T]).all()
        assert (batch["nsp_labels"] == a["next_sentence_labels"][rows]).all()
        # flat positions b*T + t pick the predicted tokens, row by row
        expected = [(b, int(t)) for b, r in enumerate(rows) for t in a["masked_lm_positions"][r, :a["num_masked"][r]]]
        assert [divmod(int(p), T) for p in batch["mlm_positions"]] == expected
        labels = [int(l) for r in rows for l in a["masked_lm_ids"][r, :a["num_masked"][r]]]
        assert batch["mlm_labels"].tolist() == labels
        shown = batch["input_ids"].reshape(-1)[batch["mlm_positions"]]
        assert np.mean(shown == MASK) > 0.4


def test_untrimmed_batches_keep_max_seq_length(prepared):
    data = PretrainingData(prepared)
    batch = make_batch(data.arrays, np.arange(4), trim=False)
    assert batch["input_ids"].shape == (4, 32)
    assert divmod(int(batch["mlm_positions"][-1]), 32)[0] == 3


def test_batch_order_depends_on_seed_and_epoch_and_resumes_exactly(prepared):
    data = PretrainingData(prepared)
    assert sorted(data.order(1, 0)) == list(range(len(data)))
    assert (data.order(1, 0) != data.order(1, 1)).any() and (data.order(1, 0) != data.order(2, 0)).any()
    whole = list(data.batches(6, seed=1, epoch=2))
    assert len(whole) == data.num_batches(6) == -(-len(data) // 6)
    resumed = list(data.batches(6, seed=1, epoch=2, start=5))
    assert len(resumed) == len(whole) - 5
    for x, y in zip(whole[5:], resumed):
        assert all((x[k] == y[k]).all() for k in x)
    assert len(list(data.batches(6, seed=1, drop_last=True))) == len(data) // 6


def test_reader_rejects_a_tampered_directory(tmp_path):
    write(tmp_path)
    with pytest.raises(DataError, match="no split 'dev'"):
        PretrainingData(tmp_path, "dev")
    with pytest.raises(DataError, match="batch_size"):
        next(PretrainingData(tmp_path).batches(0, seed=0))
    with open(tmp_path / VOCAB_FILE, "a", encoding="utf-8") as f:
        f.write("extra\n")
    with pytest.raises(DataError, match="not the vocabulary"):
        PretrainingData(tmp_path)
    with pytest.raises(DataError, match="no manifest.json"):
        PretrainingData(tmp_path / "nowhere")


@pytest.mark.parametrize("field, row_value", [
    ("num_masked", lambda a, r: a["masked_lm_positions"].shape[1] + 1),   # before: padding slots predicted [PAD] at 0
    ("num_masked", lambda a, r: -1),
    ("masked_lm_positions", lambda a, r: a["lengths"][r]),               # past its sequence
    ("masked_lm_positions", lambda a, r: 0),                             # [CLS]
    ("masked_lm_ids", lambda a, r: len(TOKENS)),                         # outside the vocabulary
    ("lengths", lambda a, r: 0),
])
def test_a_shard_tampered_in_its_masked_slots_is_refused(tmp_path, field, row_value):
    write(tmp_path)
    manifest = json.load(open(tmp_path / MANIFEST))
    path = tmp_path / manifest["splits"]["train"]["shards"][0]["file"]
    arrays = read_shard(path)
    r = int(np.flatnonzero(arrays["num_masked"] > 0)[0])                # a row that predicts something
    if arrays[field].ndim == 2:
        arrays[field][r, 0] = row_value(arrays, r)
    else:
        arrays[field][r] = row_value(arrays, r)
    np.savez(path, **arrays)
    with pytest.raises(DataError, match=f"shard {path} has|outside the manifest's"):
        PretrainingData(tmp_path)


def test_large_vocabularies_use_int32_ids():
    inst = Instance([2, 70000, 3, 5, 3], 1, [1], [70000], 1)
    arrays = pack_instances([inst], 8, 2, vocab_size=70001, pad_id=0)
    assert arrays["input_ids"].dtype == np.int32 and arrays["input_ids"][0, 1] == 70000
    small = Instance([2, 65535, 3, 5, 3], 1, [1], [65535], 1)
    assert pack_instances([small], 8, 2, vocab_size=65536, pad_id=0)["input_ids"].dtype == np.uint16


@pytest.mark.parametrize("wide_ids", [False, True], ids=["uint16 ids", "int32 ids"])
def test_the_numpy_reader_in_docs_reads_what_npbert_reads(prepared, tmp_path, wide_ids):
    """docs/data.md's reader, run from the page: the same arrays, order and batches as PretrainingData."""
    imports = re.findall(r"^(?:import|from) (\S+)", reader_code(), flags=re.M)
    assert imports == ["json", "os", "numpy"]                                       # NumPy alone
    reader = load_reader()
    directory = prepared
    if wide_ids:                                       # a vocabulary past 65,536 tokens: int32 ids
        directory = tmp_path / "wide"
        tokens = TOKENS + [f"x{i}" for i in range(66000)]
        prep.write_pretraining_data(str(directory), documents(), tokens, options(), log=lambda *a: None)
    for split in ("train", "heldout"):
        ours, theirs = PretrainingData(directory, split).arrays, reader["read_split"](str(directory), split)
        assert sorted(theirs) == sorted(ours)
        for name in ours:
            assert theirs[name].dtype == ours[name].dtype and np.array_equal(theirs[name], ours[name]), name
    data, arrays = PretrainingData(directory), reader["read_split"](str(directory))
    assert (arrays["input_ids"].dtype == np.int32) == wide_ids and arrays["input_ids"].max() > 65535 * wide_ids
    for epoch in (0, 3):
        order = reader["epoch_order"](len(data), 5, epoch)
        assert np.array_equal(order, data.order(5, epoch))
        for k, batch in enumerate(data.batches(8, seed=5, epoch=epoch, trim=False)):
            inputs = reader["model_inputs"](arrays, order[8 * k:8 * (k + 1)])
            for name in ("input_ids", "token_type_ids", "attention_mask"):
                assert inputs[name].dtype == np.int64 and np.array_equal(inputs[name], batch[name]), name
            assert np.array_equal(inputs["next_sentence_label"], batch["nsp_labels"])
            used = inputs["masked_lm_labels"] != -100                                       # (B, P)
            T = inputs["input_ids"].shape[1]
            flat = inputs["masked_lm_positions"] + T * np.arange(len(used))[:, None]       # (B, P)
            assert np.array_equal(flat[used], batch["mlm_positions"])
            assert np.array_equal(inputs["masked_lm_labels"][used], batch["mlm_labels"])
            assert (inputs["masked_lm_positions"][~used] == 0).all() and used.sum(1).min() >= 1


def test_statistics_count_what_is_in_the_shard():
    inst = [Instance([2, 9, 4, 3, 7, 8, 3], 3, [2, 4], [5, 7], 0),     # 4 = [MASK] at 2, 7 kept at 4
            Instance([2, 6, 3, 11, 3], 1, [3], [10], 1)]                # 11 shown for 10: random
    c = count_shard(pack_instances(inst, 8, 3, vocab_size=20, pad_id=0), mask_id=4)
    assert (c["instances"], c["tokens"], c["content_tokens"], c["predicted"]) == (2, 12, 6, 3)
    assert (c["as_mask"], c["unchanged"], c["random"], c["is_next"]) == (1, 1, 1, 1)
    assert c["length_counts"][5] == 1 and c["length_counts"][7] == 1


def test_report_and_histogram(prepared):
    report = format_report(json.load(open(prepared / MANIFEST)))
    assert "train: 36 documents" in report and "IsNext" in report and "[MASK]" in report
    bars = length_histogram([0, 0, 4, 0, 2], bins=2, width=4)
    assert bars == ["     1-2    #### 4", "     3-4    ##   2"]
