"""Collection documents as stored documents: URLs, bytes, records and block cuts."""

from __future__ import annotations

import hashlib

import pytest

from services.ingest.collection import (
    IngestDoc,
    collection_host,
    doc_body,
    doc_url,
    prepare,
    to_document,
)
from services.storage.documents import SourceDoc
from services.storage.formats.block_pair import cut_blocks
from services.storage.formats.blocks import ENTRY_SIZE, PREAMBLE_SIZE
from services.text.urls import normalize_url, url_id


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("cranfield", "cranfield.collection.invalid"),
        ("My_Collection 2", "my-collection-2.collection.invalid"),
        ("___", "collection.collection.invalid"),
        ("x" * 100, "x" * 63 + ".collection.invalid"),
    ],
)
def test_collection_host_is_a_dns_label_of_the_folder_name(name, host):
    assert collection_host(name) == host


def test_doc_url_is_normalized_stable_and_distinct_per_id():
    host = collection_host("cranfield")
    ids = ["1", "01", "a/b", "a b", "a%20b", "ü", "?x=1", "#frag", ".."]
    urls = [doc_url(host, i) for i in ids]
    assert urls[0] == "https://cranfield.collection.invalid/doc/1"
    assert all(normalize_url(u) == u for u in urls)
    assert len(set(urls)) == len(ids)
    assert urls == [doc_url(host, i) for i in ids]


def test_body_is_title_blank_line_text_in_utf8():
    assert doc_body(SourceDoc("1", "Wings", "Swept wings.")) == b"Wings\n\nSwept wings."
    assert doc_body(SourceDoc("2", "", "No title.")) == b"No title."
    assert doc_body(SourceDoc("3", "Düse", "")) == "Düse\n\n".encode()


def test_prepare_names_the_body_and_url_by_their_sha1():
    doc = prepare(SourceDoc("7", "Heat", "Heat transfer."), "c.collection.invalid")
    assert doc.source_id == "7"
    assert doc.url == "https://c.collection.invalid/doc/7"
    assert doc.url_id == url_id(doc.url) == hashlib.sha1(doc.url.encode()).hexdigest()
    assert doc.doc_id == hashlib.sha1(b"Heat\n\nHeat transfer.").hexdigest()
    assert (doc.title, doc.text) == ("Heat", "Heat transfer.")


def _doc(n: int, size: int) -> IngestDoc:
    return IngestDoc(
        str(n), f"https://c.collection.invalid/doc/{n}", f"{n:040x}", "0" * 40, b"x" * size, "", ""
    )


def _size(doc: IngestDoc) -> int:
    return len(doc.body)


def test_cut_blocks_caps_documents_per_block():
    blocks = list(cut_blocks((_doc(n, 10) for n in range(7)), _size, max_docs=3, max_bytes=10**6))
    assert [[d.source_id for d in b] for b in blocks] == [["0", "1", "2"], ["3", "4", "5"], ["6"]]


def test_cut_blocks_caps_bytes_and_gives_a_large_document_its_own_block():
    cap = PREAMBLE_SIZE + 2 * (ENTRY_SIZE + 100)  # exactly two 100-byte documents
    sizes = [100, 100, 100, 5000, 100]
    blocks = list(cut_blocks((_doc(n, s) for n, s in enumerate(sizes)), _size, max_docs=100, max_bytes=cap))
    assert [[d.source_id for d in b] for b in blocks] == [["0", "1"], ["2"], ["3"], ["4"]]
    for block in blocks:
        size = PREAMBLE_SIZE + sum(ENTRY_SIZE + len(d.body) for d in block)
        assert size <= cap or len(block) == 1


def test_cut_blocks_of_nothing_is_no_block():
    assert list(cut_blocks(iter(()), _size, max_docs=10, max_bytes=10**6)) == []


def test_document_carries_the_text_as_text_plain_english():
    doc = prepare(SourceDoc("9", "Shock waves", "Oblique shocks."), "c.collection.invalid")
    record = to_document(doc, 41, fetched_at=12.5).record()
    assert (record.doc_num, record.url, record.url_id, record.doc_id) == (41, doc.url, doc.url_id, doc.doc_id)
    assert (record.title, record.text, record.lang) == ("Shock waves", "Oblique shocks.", "en")
    assert record.content_type == "text/plain"
    # Where its bytes go is filled in when the block pair is written (storage.block_pair).
    assert (record.content_block, record.content_index, record.fetched_at) == ("", -1, 12.5)
    assert record.links == []
