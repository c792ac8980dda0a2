"""build_index end to end: record blocks + document rows in, an active index
segment and PageRank rows out; on file:// + SQLite, and on moto S3 + MariaDB."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from sqlalchemy import func, select

from mapreduce.build import BuildError, BuildResult, build_index
from services.config import Settings
from services.storage.blobstore import open_blobstore
from services.storage.db import active_index, make_engine, session_factory
from services.storage.models import IndexVersion, PageRankScore
from services.storage.segment import open_segment
from services.text.analyze import analyze

CORPUS = [
    [
        {"url": "http://news.test/", "title": "Nimbus news", "description": "Daily weather news",
         "text": "Clouds gather over the valley. Rain expected.",
         "links": ["http://news.test/rain", "http://news.test/sun", "http://news.test/",
                   "http://elsewhere.test/ad"]},
        {"url": "http://news.test/rain", "title": "Rain", "text": "Rain, rain and more rain.",
         "links": ["http://news.test/"]},
        {"url": "http://news.test/sun", "title": "Sun", "text": "Sunny days follow rain.",
         "links": ["http://news.test/", "http://news.test/rain"]},
    ],
    [
        {"url": "http://wiki.test/cloud", "title": "Cloud", "text": "A cloud is water vapour.",
         "links": ["http://news.test/", "http://wiki.test/vapour"]},
        {"url": "http://wiki.test/vapour", "title": "Vapour", "text": "Water vapour."},
        {"url": "http://wiki.test/empty"},  # no text at all: length 0, norm 0
    ],
]
# doc_nums in order: 0 news, 1 rain, 2 sun, 3 cloud, 4 vapour, 5 empty. By hand,
# without self-links (0 -> 0) and links to pages never crawled:
ADJACENCY = [[1, 2], [0], [0, 1], [0, 4], [], []]
N = 6
CorpusWriter = Callable[..., list]


def networkx_ranks(damping: float) -> np.ndarray:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(N))
    graph.add_edges_from((s, t) for s, ts in enumerate(ADJACENCY) for t in ts)
    ranks = nx.pagerank(graph, alpha=damping, tol=1e-13, max_iter=10_000)
    return np.array([ranks[i] for i in range(N)])


def expected_postings() -> dict[str, dict[int, int]]:
    """term -> {doc: tf}, straight from the analyzer (no MapReduce)."""
    postings: dict[str, dict[int, int]] = {}
    pages = [page for block in CORPUS for page in block]
    for doc, page in enumerate(pages):
        text = f"{page.get('title', '')} {page.get('description', '')} {page.get('text', '')}"
        for term, tf in Counter(analyze(text)).items():
            postings.setdefault(term, {})[doc] = tf
    return postings


def check_segment(settings: Settings, segment: str, tmp_path: Path) -> dict[str, np.ndarray]:
    store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    arrays, meta = open_segment(store.download(segment, tmp_path / "dl" / "segment.nseg"))
    assert {name: arr.dtype.str for name, arr in arrays.items()} == {
        "term_bytes": "|u1", "term_offsets": "<u8", "df": "<u4", "idf": "<f4",
        "post_offsets": "<u8", "post_docs": "<u4", "post_tfs": "<u4", "doc_lengths": "<u4",
        "doc_norms": "<f4", "pagerank": "<f8"}

    expected = expected_postings()
    t = len(expected)
    assert meta["format"] == 1 and meta["num_docs"] == N and meta["num_terms"] == t
    assert meta["num_postings"] == sum(len(p) for p in expected.values())
    assert meta["pagerank_damping"] == settings.pagerank_damping

    offsets = arrays["term_offsets"]
    terms = [bytes(arrays["term_bytes"][offsets[i]:offsets[i + 1]]) for i in range(t)]
    assert terms == sorted(term.encode() for term in expected)
    for i, raw in enumerate(terms):
        lo, hi = arrays["post_offsets"][i], arrays["post_offsets"][i + 1]
        docs = arrays["post_docs"][lo:hi].tolist()
        assert docs == sorted(docs)
        assert dict(zip(docs, arrays["post_tfs"][lo:hi].tolist(), strict=True)) == \
            expected[raw.decode()]
        assert arrays["df"][i] == len(expected[raw.decode()])
        assert arrays["idf"][i] == pytest.approx(math.log(1 + N / arrays["df"][i]), rel=1e-6)

    idf = {raw.decode(): float(arrays["idf"][i]) for i, raw in enumerate(terms)}
    for doc in range(N):
        weights = [(1 + math.log(p[doc])) * idf[term] for term, p in expected.items() if doc in p]
        assert arrays["doc_norms"][doc] == pytest.approx(math.sqrt(sum(w * w for w in weights)),
                                                         rel=1e-5)
        assert arrays["doc_lengths"][doc] == sum(p.get(doc, 0) for p in expected.values())
    assert arrays["doc_lengths"][5] == 0 and arrays["doc_norms"][5] == 0

    pagerank = np.asarray(arrays["pagerank"])
    assert pagerank.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(pagerank - networkx_ranks(settings.pagerank_damping)).max() < 1e-6
    return arrays


def check_database(settings: Settings, result: BuildResult, pagerank: np.ndarray) -> None:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            active = active_index(session)
            assert active is not None and active.id == result.version_id
            assert active.segment == result.segment and active.num_docs == N
            assert session.scalar(select(func.count()).where(IndexVersion.active.is_(True))) == 1
            scores = dict(session.execute(select(PageRankScore.doc_num, PageRankScore.score)).all())
            assert scores == pytest.approx(dict(enumerate(pagerank.tolist())), abs=1e-15)
    finally:
        engine.dispose()


def build_twice_and_check(settings: Settings, tmp_path: Path,
                          corpus_writer: CorpusWriter) -> BuildResult:
    """Build, check segment and database, build again; returns the second build."""
    store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    corpus_writer(store, settings.database_url, CORPUS)
    first = build_index(settings, progress=False)
    assert (first.num_docs, first.num_terms) == (N, len(expected_postings()))
    assert first.segment.startswith("index/segment-") and first.segment.endswith(".nseg")
    assert first.pagerank_delta < settings.pagerank_tolerance
    arrays = check_segment(settings, first.segment, tmp_path)
    check_database(settings, first, np.asarray(arrays["pagerank"]))

    second = build_index(settings, progress=False)
    assert second.version_id != first.version_id and second.segment != first.segment
    check_database(settings, second, np.asarray(arrays["pagerank"]))
    assert store.exists(first.segment) and store.exists(second.segment)
    assert not any((settings.var_dir / "mr").iterdir())  # scratch removed after success
    return second


@pytest.mark.parametrize("engine", ["memory", "mapreduce"])
def test_build_index_on_file_store_and_sqlite(settings: Settings, tmp_path: Path,
                                              corpus_writer: CorpusWriter,
                                              capsys: pytest.CaptureFixture[str], engine: str) -> None:
    tuned = settings.with_overrides(pagerank_tolerance=1e-10, pagerank_max_iterations=200,
                                    pagerank_engine=engine)
    second = build_twice_and_check(tuned, tmp_path, corpus_writer)
    assert second.pagerank_delta < tuned.pagerank_tolerance
    assert capsys.readouterr().err == ""  # progress=False prints nothing


def test_build_index_on_moto_s3_and_mariadb(moto_server: str, s3_bucket: str, mysql_url: str,
                                            tmp_path: Path, corpus_writer: CorpusWriter) -> None:
    settings = Settings(database_url=mysql_url, blob_url=f"s3://{s3_bucket}/nimbus",
                        aws_endpoint_url=moto_server, mr_runner="inline",
                        var_dir=tmp_path / "var", pagerank_tolerance=1e-10,
                        pagerank_max_iterations=200)
    second = build_twice_and_check(settings, tmp_path, corpus_writer)
    assert second.segment.startswith("index/segment-") and second.num_docs == N


def test_build_reports_stages_on_stderr(settings: Settings, corpus_writer: CorpusWriter,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, CORPUS[:1])
    result = build_index(settings.with_overrides(pagerank_max_iterations=3))
    err = capsys.readouterr().err
    for stage in ("1/4 index", "2/4 link graph", "3/4 pagerank", "4/4 publish", result.segment):
        assert stage in err
    assert result.pagerank_iterations == 3 and result.num_docs == 3


def test_build_without_documents_says_crawl_first(settings: Settings) -> None:
    with pytest.raises(BuildError, match="crawl first: nimbus crawl URL"):
        build_index(settings, progress=False)
