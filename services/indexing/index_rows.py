"""MRIndex's output read back: the rows of the job's file, gathered into the columns a
segment is built from (``segment_arrays``).

The row kinds and keys are the job's (``mapreduce.mr_index``); a row this side does not
know means the job and the publisher disagree, and is an error, never skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pybase64

from mapreduce.mr_index import (
    FORMS,
    FORMS_KEY,
    LANGUAGE,
    LANGUAGE_KEY,
    LENGTH,
    LENGTH_KEY,
    TERM,
    TERM_KEY,
    VOCABULARY,
    VOCABULARY_KEY,
)
from services.indexing.errors import PublishError


@dataclass
class IndexColumns:
    """MRIndex output: each term's postings on the wire, and each document's field lengths."""

    chunks: dict[bytes, bytes | str] = field(default_factory=dict)  # UTF-8 term -> wire text
    lengths: dict[int, list[int]] = field(default_factory=dict)
    forms: dict[int, bytes] = field(default_factory=dict)  # doc -> Bloom filter of its word forms
    vocabulary: dict[str, int] = field(default_factory=dict)  # written form -> documents holding it
    languages: dict[str, int] = field(default_factory=dict)  # analysis -> pages analyzed so


def collect_index_rows(rows: Iterable[tuple[Any, Any]]) -> IndexColumns:
    """Gather MRIndex rows (``("t", term) -> wire text``, ``("l", doc) -> field lengths``),
    as ``read_index_rows`` gives them; the texts are decoded all at once by
    ``segment_arrays``."""
    cols = IndexColumns()
    for (kind, name), value in rows:
        if kind == TERM:
            key = name.encode("utf-8")
            if key in cols.chunks:
                raise PublishError(f"term {name!r} came twice from MRIndex: job and publisher disagree")
            cols.chunks[key] = value
        elif kind == LENGTH:
            cols.lengths[int(name)] = value
        elif kind == FORMS:
            cols.forms[int(name)] = value
        elif kind == VOCABULARY:
            cols.vocabulary[name] = cols.vocabulary.get(name, 0) + int(value)
        elif kind == LANGUAGE:
            cols.languages[name] = cols.languages.get(name, 0) + int(value)
        else:
            raise PublishError(f"unexpected MRIndex row kind {kind!r}: job and publisher disagree")
    return cols


def read_index_rows(path: Path) -> Iterator[tuple[tuple[str, Any], Any]]:
    """MRIndex's output file as ``((kind, name), value)``: ``(("t", term), wire text)`` and
    ``(("l", doc), [title, body, anchor, url, meta, nav])``."""
    term_key, length_key = TERM_KEY, LENGTH_KEY
    with Path(path).open("rb") as fh:
        for line in fh:
            key, _, value = line.rstrip(b"\r\n").partition(b"\t")
            if key.startswith(term_key):
                yield (TERM, key[len(term_key) :].decode("utf-8")), value
            elif key.startswith(length_key):
                yield (LENGTH, int(key[len(length_key) :])), [int(x) for x in value.split(b",")]
            elif key.startswith(FORMS_KEY):
                yield (FORMS, int(key[len(FORMS_KEY) :])), pybase64.b64decode(value)
            elif key.startswith(VOCABULARY_KEY):
                yield (VOCABULARY, key[len(VOCABULARY_KEY) :].decode("utf-8")), int(value)
            elif key.startswith(LANGUAGE_KEY):
                yield (LANGUAGE, key[len(LANGUAGE_KEY) :].decode("ascii")), int(value)
            elif key:
                raise PublishError(f"{path}: unexpected MRIndex row {key[:40]!r}: job and publisher disagree")
