"""A segment of a few web pages (url, title, text, anchor text of links to it), built by the
index's own steps (the map tasks' posting buffer, the publish's arrays and codec), for
retrieval tests that need real analysis, URL kinds, hosts and a forward index."""

from __future__ import annotations

import numpy as np

from mapreduce.mr_index import FORMS, LENGTH, TERM, VOCABULARY
from mapreduce.postings import PostingBuffer
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.ranking.entry_pages import url_kinds
from services.search.retrieval.segment import SegmentIndex
from services.storage.formats.records import Record
from services.storage.formats.segment_codec import compact_segment
from services.text.urls import host_key


def index_of(pages: list[tuple[str, str, str, str]], with_kinds: bool = True) -> SegmentIndex:
    return SegmentIndex(0, "t", None, {"languages": {"en": len(pages)}}, arrays_of(pages, with_kinds))


def arrays_of(
    pages: list[tuple[str, str, str, str]], with_kinds: bool = True, with_forms: bool = False
) -> dict[str, np.ndarray]:
    """The stored arrays of a segment of ``pages`` (``compact_segment``'s); ``with_forms``: with
    the documents' word-form filters (the words-as-typed rescore reads them)."""
    buffer, rows = PostingBuffer(), []
    for num, (url, title, text, anchor) in enumerate(pages):
        buffer.add_anchor(num, anchor)
        buffer.add(Record(num, url, "", "", "text/html", title=title, text=text, lang="en"))
    chunks, lengths = buffer.drain()
    rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
    rows += [([TERM, t], c.encode()) for t, c in chunks]
    if with_forms:
        rows += [([FORMS, num], forms) for num, forms in chunks.forms.items()]
        rows += [([VOCABULARY, form], held) for form, held in chunks.vocabulary.items()]
    n = len(pages)
    kinds = url_kinds(((i, p[0]) for i, p in enumerate(pages)), n) if with_kinds else None
    hosts: dict[str, int] = {}
    doc_hosts = np.array([hosts.setdefault(host_key(p[0]), len(hosts)) for p in pages])
    arrays = segment_arrays(
        collect_index_rows(rows), np.full(n, 1 / n), n, url_kinds=kinds, doc_hosts=doc_hosts
    )
    return compact_segment(arrays)
