"""Reading task files line by line, with errors that name the file and the line."""
from __future__ import annotations

import csv
import io
import json

from npbert.errors import DataError
from npbert.reading import read_bytes


def read_lines(path, what="task file") -> list[str]:
    """The lines of a UTF-8 text file (a BOM is dropped), without their line endings; what names
    the file in errors ("task file", "input file"). /dev/null, /dev/stdin and pipes are read too,
    up to reading.TEXT_LIMIT bytes (/dev/zero: refused at its first NUL byte)."""
    return decode_lines(read_bytes(path, what), path)


def decode_lines(raw: bytes, source) -> list[str]:
    """UTF-8 bytes -> lines without their endings, or a DataError naming source and the line."""
    if b"\0" in raw:                                   # valid UTF-8, but no text holds NUL
        line = raw[:raw.index(b"\0")].count(b"\n") + 1
        raise DataError(f"{source}:{line}: not UTF-8 text (a NUL byte: a binary file, or UTF-16 text)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise DataError(f"{source}:{line}: not UTF-8 text (byte {raw[e.start:e.start + 1]!r})") from None
    lines = [line.removesuffix("\r") for line in text.split("\n")]   # only \n ends a line (not \f, \u2028, ...)
    return lines[:-1] if lines and not lines[-1] else lines


JSON_KINDS = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a float"}


def json_kind(value) -> str:
    """What a JSON value is, as a message says it: an object, a list, ..., true, false, null."""
    return "null" if value is None else json.dumps(value) if isinstance(value, bool) else JSON_KINDS[type(value)]


def where(path, line) -> str:
    return f"{path}:{line}"


def require_columns(path, header, needed, line=1) -> dict:
    """column name -> index, or a DataError listing the missing columns and the ones found."""
    index = {name: i for i, name in enumerate(header)}
    missing = [name for name in needed if name not in index]
    if missing:
        raise DataError(f"{where(path, line)}: missing column(s) {', '.join(missing)}; the header has "
                        f"{column_names(header) if header else 'nothing'}")
    return index


def column_names(header) -> str:
    """A header's names for an error message, on one line: quoted if blank, padded with spaces
    or holding a line break or other unprintable character (a column "text " is not "text"),
    and cut short after 300 characters."""
    names = ", ".join(n if n and n.isprintable() and n == n.strip() else repr(n) for n in header)
    return names if len(names) <= 300 else f"{names[:300]}... ({len(header)} columns)"


def read_csv_rows(path, needed):
    """Yield (column index, row, line number) for each non-empty row of a CSV file whose header
    names at least the columns `needed`; a ragged row or bad quoting is a DataError at its line."""
    reader = csv.reader(io.StringIO("\n".join(read_lines(path)) + "\n"))
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path} is empty")
        index = require_columns(path, header, needed)
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(f"{where(path, reader.line_num)}: {len(row)} fields, the header has {len(header)}")
            yield index, row, reader.line_num
    except csv.Error as e:
        raise DataError(f"{where(path, reader.line_num)}: bad CSV: {e}") from None
