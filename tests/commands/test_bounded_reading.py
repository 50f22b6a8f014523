"""What a user names is read bounded (npbert/reading.py), attacked with what a hostile user can name: a
FIFO, /dev/zero, a link to it in a corpus directory, a pipe given as a training file, a hidden
file beside the corpus, a vocabulary edited in place. Each is one line and exit 2, or read as it
should be; none blocks, reads without end or fills memory. The /dev/zero commands run in a child
with 3 GiB of address space, so a regression is a MemoryError there, not the OOM killer here."""
import io
import os
import subprocess

import pytest

from npbert.atomic import path_sha256
from npbert.cli import main
from npbert.data.corpus import read_text_corpus
from npbert.data.prepare import PrepareOptions, prepare
from npbert.errors import DataError
from npbert.reading import read_bytes, read_stream
from npbert.tasks.registry import TASKS
from support.hostile import LIMIT, NPBERT, env, npbert
from support.patience import HANG_SECONDS, call_beside_fifos
from support.random_models import random_finetuned

DOCUMENTS = "".join(f"Document {i} begins here. It has a second sentence.\n\n" for i in range(40))
QUIET = dict(log=lambda *a, **k: None)


def limited(*argv) -> subprocess.CompletedProcess:
    return npbert(*argv, memory=LIMIT)


def one_line(stderr, command) -> str:
    assert stderr.count("\n") == 1 and stderr.startswith(f"npbert {command}: error: "), stderr
    return stderr


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    return random_finetuned(tmp_path_factory.mktemp("sentence"), "sequence_classification",
                            TASKS["builtin-sentence"].labels)


@pytest.fixture
def corpus_dir(tmp_path):
    directory = tmp_path / "corpus"
    directory.mkdir()
    (directory / "a.txt").write_text(DOCUMENTS)
    return directory


# --- corpora that are not regular files: refused before they are hashed or read (before: a hang) --------

@pytest.mark.parametrize("command", ["prepare", "pretrain"])
def test_a_fifo_corpus_is_refused_without_waiting_for_a_writer(tmp_path, capsys, command):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    code = call_beside_fifos(lambda: main([command, "--corpus", str(fifo), "--out", str(tmp_path / "out")]), fifo)
    assert code == 2 and f"corpus file {fifo} is a FIFO (named pipe), not a regular file" in \
        one_line(capsys.readouterr().err, command)
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_a_fifo_txt_in_a_corpus_directory_is_refused(corpus_dir, capsys):
    os.mkfifo(corpus_dir / "pipe.txt")
    out = str(corpus_dir.parent / "out")
    code = call_beside_fifos(lambda: main(["prepare", "--corpus", str(corpus_dir), "--out", out]),
                             corpus_dir / "pipe.txt")
    assert code == 2 and "pipe.txt is a FIFO (named pipe), not a regular file" in one_line(capsys.readouterr().err,
                                                                                           "prepare")


@pytest.mark.parametrize("how", ["the corpus", "a link in a corpus directory"])
def test_dev_zero_as_a_corpus_is_refused_at_once(corpus_dir, how):
    # before: /dev/zero hashed forever; zero.txt -> /dev/zero was read whole (MemoryError, or the OOM killer)
    if how == "the corpus":
        corpus = "/dev/zero"
    else:
        (corpus_dir / "zero.txt").symlink_to("/dev/zero")
        corpus = str(corpus_dir)
    r = limited("prepare", "--corpus", corpus, "--out", str(corpus_dir.parent / "out"))
    assert r.returncode == 2 and "is a character device, not a regular file" in one_line(r.stderr, "prepare")


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_dev_zero_as_a_task_file_is_refused_at_its_first_byte(sentence_model, command):
    # before: read whole into memory: a MemoryError under a limit, the OOM killer at 24 GB without one
    data = ["--input", "/dev/zero"] if command == "predict" else ["--data", "/dev/zero"]
    r = limited(command, sentence_model, "--task", "classification", *data)
    assert r.returncode == 2 and "a NUL byte at offset 0" in one_line(r.stderr, command), r.stderr[-2000:]


def test_dev_zero_on_predicts_stdin_is_refused(sentence_model):
    with open("/dev/zero", "rb") as zero:
        r = npbert("predict", sentence_model, "--task", "builtin-sentence", stdin=zero, memory=LIMIT)
    assert r.returncode == 2 and "input <stdin> is not text: a NUL byte" in one_line(r.stderr, "predict")


def test_dev_zero_as_a_vocabulary_is_refused(corpus_dir):
    r = limited("prepare", "--corpus", str(corpus_dir), "--vocab", "/dev/zero", "--out", str(corpus_dir.parent / "o"))
    assert r.returncode == 2 and "vocabulary file /dev/zero is a character device" in one_line(r.stderr, "prepare")


def test_a_file_larger_than_the_limit_is_refused_by_its_size_unread(tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:                         # sparse: 3 GiB claimed, nothing written
        f.truncate(3 << 30)
    with pytest.raises(DataError, match=r"holds 3,221,225,472 bytes, more than the 2 GiB npbert reads into memory"):
        read_bytes(big, "corpus file")


def test_a_stream_longer_than_the_limit_is_refused_as_it_is_read():
    assert read_stream(io.BytesIO(b"x" * 100), "<stdin>", "input", limit=100) == b"x" * 100
    with pytest.raises(DataError, match="<stdin> holds more bytes"):
        read_stream(io.BytesIO(b"x" * 101), "<stdin>", "input", limit=100)


# --- a training run's inputs are read again on --resume: a pipe is refused (before: an empty read pinned) ---

def test_a_pipe_as_a_training_file_is_refused(tmp_path):
    from support.random_models import random_checkpoint
    model = random_checkpoint(str(tmp_path / "model"), layers=1, hidden=16)
    rows = "text,label\n" + "".join(f"sentence number {i} .,{i % 2}\n" for i in range(20))
    dev = tmp_path / "dev.csv"
    dev.write_text(rows)
    r = subprocess.run([*NPBERT, "finetune", "--task", "classification", "--model", model, "--train", "/dev/stdin",
                        "--dev", str(dev), "--out", str(tmp_path / "ft"), "--epochs", "1"], input=rows,
                       capture_output=True, text=True, env=env(), timeout=HANG_SECONDS)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "training input /dev/stdin is a FIFO (named pipe), not a regular file" in one_line(r.stderr, "finetune")
    assert not (tmp_path / "ft").exists()


# --- a corpus directory: its hidden files are neither read nor hashed; an edited --vocab is noticed ---

def test_a_hidden_txt_beside_the_corpus_is_neither_read_nor_hashed(corpus_dir):
    # before: .hidden.txt was read but not hashed: edited, `prepare` said "already prepared" on stale shards
    (corpus_dir / ".hidden.txt").write_text("Hidden words appear here. Never in the corpus.\n\n" * 5)
    (corpus_dir / "._a.txt").write_bytes(b"\x00\x05\x16\x07 macOS resource fork")   # would not even decode
    documents = list(read_text_corpus(str(corpus_dir)))
    assert len(documents) == 40 and not any("Hidden" in s for d in documents for s in d)
    before = path_sha256(str(corpus_dir))
    (corpus_dir / ".hidden.txt").write_text("Edited.\n")
    assert path_sha256(str(corpus_dir)) == before


def test_an_edited_vocabulary_is_not_taken_for_the_one_prepared_with(tmp_path, corpus_dir):
    # before: the manifest keyed on the --vocab path, so an edited file was "already prepared"
    from npbert.data.builtin_vocab import builtin_vocab
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(builtin_vocab()) + "\n")
    opts = PrepareOptions(corpus=str(corpus_dir), vocab=str(vocab), out=str(tmp_path / "data"), max_seq_length=32)
    prepare(opts, **QUIET)
    vocab.write_text("\n".join(builtin_vocab()) + "\nzebrafish\n")
    with pytest.raises(DataError, match="prepared with other options: vocab_file_sha256="):
        prepare(opts, **QUIET)


def test_prepares_answer_to_a_vocabulary_unchanged_is_already_prepared(tmp_path, corpus_dir):
    from npbert.data.builtin_vocab import builtin_vocab
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(builtin_vocab()) + "\n")
    opts = PrepareOptions(corpus=str(corpus_dir), vocab=str(vocab), out=str(tmp_path / "data"), max_seq_length=32)
    said = []
    prepare(opts, **QUIET)
    prepare(opts, log=said.append)
    assert said == [f"{opts.out} is already prepared with these options"]


# --- a checkpoint's tokenizer files: read bounded like its vocab.txt (before: a hang, or memory filled) ---

@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json"])
def test_a_tokenizer_file_that_is_a_fifo_or_dev_zero_is_refused(tmp_path, capsys, name):
    from support.random_models import random_checkpoint
    model = random_checkpoint(str(tmp_path / "model"), layers=1, hidden=16)
    path = tmp_path / "model" / name
    path.unlink()
    os.mkfifo(path)
    assert call_beside_fifos(lambda: main(["fill-mask", model, "a [MASK] ."]), path) == 2
    assert f"{name} is a FIFO (named pipe), not a regular file" in one_line(capsys.readouterr().err, "fill-mask")
    path.unlink()
    path.symlink_to("/dev/zero")
    r = limited("fill-mask", model, "a [MASK] .")
    assert r.returncode == 2 and f"{name} is a character device, not a regular file" in one_line(r.stderr, "fill-mask")
