"""Recrawls leave stale record versions in old blocks: the manifest built from the
documents table makes MRIndex, MRLinkGraph and the whole build read only each
document's current record (inline runner; the local runner is covered in
test_mr_index_job.py)."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from mapreduce.mr_index import MRIndex
from mapreduce.mr_linkgraph import MRLinkGraph, adjacency_rows
from mapreduce.postings import url_words
from mapreduce.postings_wire import Chunk
from services.config import Settings
from services.indexing.build import build_index
from services.indexing.index_rows import read_index_rows
from services.indexing.manifest import write_manifest_parts
from services.indexing.runner import run_job
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import open_segment
from services.storage.sql.engines import make_engine, session_factory
from services.text.analysis.analyze import analyze
from services.text.urls import normalize_url

APPLES, PEARS = "http://fruit.test/apples", "http://fruit.test/pears"
PLUMS, FIGS = "http://fruit.test/plums", "http://fruit.test/figs"
RECRAWLED = [
    [  # block 0: first versions
        {"url": APPLES, "title": "Apples", "text": "Quinces and medlars", "links": [PEARS]},
        {"url": PEARS, "title": "Pears", "text": "Pears ripen late"},
        {"url": PLUMS, "title": "Plums", "text": "Gooseberries", "links": [FIGS]},
    ],
    [  # block 1: doc 0 changed once, doc 2 changed twice while this block was open
        {"url": APPLES, "title": "Apples", "text": "Cherries now", "links": [PLUMS], "recrawl_of": 0},
        {"url": FIGS, "title": "Figs", "text": "Figs and dates", "links": [APPLES]},
        {"url": PLUMS, "title": "Plums", "text": "Damsons", "recrawl_of": 2},
        {"url": PLUMS, "title": "Plums", "text": "Sloes", "links": [PEARS], "recrawl_of": 2},
    ],
]
# The current version of each doc_num, by hand.
CURRENT = {0: RECRAWLED[1][0], 1: RECRAWLED[0][1], 2: RECRAWLED[1][3], 3: RECRAWLED[1][1]}
STALE_WORDS = ["quinces", "medlars", "gooseberries", "damsons"]
CorpusWriter = Callable[..., list]


def expected_postings() -> dict[str, list[list[int]]]:
    postings: dict[str, list[list[int]]] = {}
    for doc in sorted(CURRENT):
        page = CURRENT[doc]
        text = f"{page.get('title', '')} {page.get('description', '')} {page.get('text', '')}"
        words = analyze(text) + analyze(url_words(normalize_url(page["url"])))
        for term, tf in Counter(words).items():
            postings.setdefault(term, []).append([doc, tf])
    return postings


def db_manifest(settings: Settings, directory: Path) -> Path:
    """The build's manifest, in one gzip part."""
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            [path], _blocks, _docs = write_manifest_parts(session, directory, parts=1)
    finally:
        engine.dispose()
    return path


def test_manifest_lists_where_each_current_record_lives(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, RECRAWLED)
    with gzip.open(db_manifest(settings, tmp_path), "rt") as fh:
        text = fh.read()
    # doc_num:position of its current record in the block (CURRENT, by hand)
    assert text == "records/test-000.rec.gz\t1:1\nrecords/test-001.rec.gz\t0:0,2:3,3:1\n"


def test_mr_index_reads_only_current_records(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, RECRAWLED)
    manifest = db_manifest(settings, tmp_path)
    out = run_job(
        MRIndex, [manifest], settings, output=tmp_path / "index.jsonl", scratch=tmp_path / "scratch"
    )
    rows = list(read_index_rows(out.path))
    # Each posting's frequency over all fields, to compare with a plain count of the words.
    postings = {
        name: [
            [d, tt + tb + ta + tu]
            for d, tt, tb, ta, tu in zip(*Chunk.decode(value).as_lists()[:5], strict=True)
        ]
        for (kind, name), value in rows
        if kind == "t"
    }
    lengths = {name: value[0] + value[1] for (kind, name), value in rows if kind == "l"}
    assert postings == expected_postings()
    assert not {term for word in STALE_WORDS for term in analyze(word)} & set(postings)
    assert lengths == {doc: len(analyze(f"{p['title']}  {p['text']}")) for doc, p in CURRENT.items()}
    assert out.counter("blocks", "records") == 4
    assert out.counter("blocks", "stale_records_skipped") == 3  # 2 in block 0, 1 in block 1
    assert out.counter("blocks", "listed_records_missing") == 0


def test_mr_linkgraph_follows_only_current_links(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, RECRAWLED)
    manifest = db_manifest(settings, tmp_path)
    out = run_job(
        MRLinkGraph, [manifest], settings, output=tmp_path / "links.jsonl", scratch=tmp_path / "scratch"
    )
    # Stale links (apples -> pears, plums -> figs) are gone; each doc is one node.
    assert dict(adjacency_rows(out.path)) == {0: [2], 1: [], 2: [1], 3: [0]}
    assert out.counter("blocks", "stale_records_skipped") == 3


def test_build_publishes_only_the_latest_text(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, RECRAWLED)
    result = build_index(settings, progress=False)
    store = open_blobstore(settings.blob_url)
    arrays, meta = open_segment(store.download(result.segment, tmp_path / "seg.nseg"))
    blob, offsets = arrays["term_bytes"].tobytes(), arrays["term_offsets"]
    terms = {blob[offsets[i] : offsets[i + 1]].decode() for i in range(meta["num_terms"])}
    # The corpus writer's links all carry the anchor text "anchor": their targets' anchor field.
    assert terms == set(expected_postings()) | {"anchor"}
    assert meta["num_docs"] == 4 and arrays["pagerank"].sum() > 0.999
