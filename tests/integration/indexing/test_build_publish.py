"""build_index end to end: record blocks + document rows in, an active index
segment and PageRank rows out; on file:// + SQLite, and on moto S3 + MariaDB."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from mapreduce.postings import url_words
from services.config import Settings
from services.indexing.build import BuildError, BuildResult, build_index
from services.ranking.bm25f import BM25FParams
from services.ranking.impact_levels import dequantize
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import open_segment, segment_dtypes
from services.storage.formats.segment_codec import expand_segment
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import IndexVersion, PageRankScore
from services.text.analysis.analyze import analyze, analyzer_version
from services.text.urls import normalize_url
from tests.networkx_reference import networkx_pagerank

CORPUS = [
    [
        {
            "url": "http://news.test/",
            "title": "Nimbus news",
            "description": "Daily weather news",
            "text": "Clouds gather over the valley. Rain expected.",
            "links": [
                "http://news.test/rain",
                "http://news.test/sun",
                "http://news.test/",
                "http://elsewhere.test/ad",
            ],
        },
        {
            "url": "http://news.test/rain",
            "title": "Rain",
            "text": "Rain, rain and more rain.",
            "links": ["http://news.test/"],
        },
        {
            "url": "http://news.test/sun",
            "title": "Sun",
            "text": "Sunny days follow rain.",
            "nav": "Home | Rain | Sun | Archive | Sign in",
            "links": ["http://news.test/", "http://news.test/rain"],
        },
    ],
    [
        {
            "url": "http://wiki.test/cloud",
            "title": "Cloud",
            "text": "A cloud is water vapour.",
            "links": ["http://news.test/", "http://wiki.test/vapour"],
        },
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
    return networkx_pagerank(ADJACENCY, damping)


IN_LINK_ANCHORS = {0: 3, 1: 2, 2: 1, 4: 1}  # crawled in-links, self-links not counted;
# the corpus writer gives every link the anchor text "anchor".


def expected_postings() -> dict[str, dict[int, list[int]]]:
    """term -> {doc: [tf title, tf body, tf anchor, tf url, tf meta, tf nav]}, straight from the
    analyzer."""
    postings: dict[str, dict[int, list[int]]] = {}
    pages = [page for block in CORPUS for page in block]
    for doc, page in enumerate(pages):
        fields = [
            analyze(page.get("title", "")),
            analyze(page.get("text", "")),
            ["anchor"] * IN_LINK_ANCHORS.get(doc, 0),
            analyze(url_words(normalize_url(page["url"]))),
            analyze(f"{page.get('description', '')} {page.get('keywords', '')}"),
            analyze(page.get("nav", "")),
        ]
        for f, words in enumerate(fields):
            for term, tf in Counter(words).items():
                postings.setdefault(term, {}).setdefault(doc, [0, 0, 0, 0, 0, 0])[f] = tf
    return postings


def bm25f_reference(expected: dict[str, dict[int, list[int]]]) -> dict[tuple[str, int], float]:
    """The documented impact formula (docs/ranking.md) in plain Python."""
    params = BM25FParams()
    names = ("title", "body", "anchor", "url", "meta", "nav")
    lengths = [[sum(p[doc][f] for p in expected.values() if doc in p) for f in range(6)] for doc in range(N)]
    avg = [(sum(x[f] for x in lengths) / N) or 1.0 for f in range(6)]
    out = {}
    for term, docs in expected.items():
        idf = math.log(1 + (N - len(docs) + 0.5) / (len(docs) + 0.5))
        for doc, tfs in docs.items():
            pseudo = sum(
                params.fields[name].weight
                * tfs[f]
                / (1 - params.fields[name].b + params.fields[name].b * lengths[doc][f] / avg[f])
                for f, name in enumerate(names)
            )
            out[term, doc] = idf * pseudo * (params.k1 + 1) / (pseudo + params.k1)
    return out


def check_segment(settings: Settings, segment: str, tmp_path: Path) -> dict[str, np.ndarray]:
    store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    arrays, meta = open_segment(store.download(segment, tmp_path / "dl" / "segment.nseg"))
    assert {name: arr.dtype for name, arr in arrays.items()} == segment_dtypes()
    arrays = expand_segment(arrays)  # the packed columns as the build made them

    expected = expected_postings()
    impacts = bm25f_reference(expected)
    t = len(expected)
    assert meta["format"] == 13 and meta["num_docs"] == N and meta["num_terms"] == t
    assert meta["analyzer"] == analyzer_version() and sum(meta["languages"].values()) == N
    assert meta["num_postings"] == sum(len(p) for p in expected.values())
    assert meta["pagerank_damping"] == settings.index.pagerank_damping
    assert BM25FParams.from_meta(meta["bm25f"]) == BM25FParams()

    offsets = arrays["term_offsets"]
    terms = [bytes(arrays["term_bytes"][offsets[i] : offsets[i + 1]]) for i in range(t)]
    assert terms == sorted(term.encode() for term in expected)
    fields = [arrays[name] for name in ("tf_title", "tf_body", "tf_anchor", "tf_url", "tf_meta", "tf_nav")]
    for i, raw in enumerate(terms):
        term = raw.decode()
        lo, hi = arrays["post_offsets"][i], arrays["post_offsets"][i + 1]
        docs = arrays["post_docs"][lo:hi].tolist()
        assert docs == sorted(docs)
        got = {d: [int(f[lo + j]) for f in fields] for j, d in enumerate(docs)}
        assert got == expected[term]
        assert arrays["df"][i] == len(expected[term])
        want = [impacts[term, d] for d in docs]
        step = float(arrays["impact_scale"][i])  # stored in steps: within half of one
        stored = dequantize(arrays["post_impacts"][lo:hi], step)
        assert stored.tolist() == pytest.approx(want, abs=step * 0.5 + 1e-6)
        assert arrays["max_impact"][i] == stored.max()
    for doc in range(N):
        words = sum(p[doc][0] + p[doc][1] + p[doc][4] for p in expected.values() if doc in p)
        assert arrays["doc_lengths"][doc] == words  # title, body and meta
        lo, hi = arrays["fwd_offsets"][doc], arrays["fwd_offsets"][doc + 1]
        forward = {
            terms[k].decode(): int(tf)
            for k, tf in zip(arrays["fwd_terms"][lo:hi], arrays["fwd_tfs"][lo:hi], strict=True)
        }
        assert forward == {
            term: p[doc][0] + p[doc][1] + p[doc][4] for term, p in expected.items() if doc in p
        }
    assert arrays["doc_lengths"][5] == 0

    pagerank = np.asarray(arrays["pagerank"])
    assert pagerank.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(pagerank - networkx_ranks(settings.index.pagerank_damping)).max() < 1e-6

    # The link graph for page info: in-links per document (sources ascending), out-link counts.
    offsets = arrays["in_offsets"].tolist()
    in_links = [arrays["in_docs"][offsets[d] : offsets[d + 1]].tolist() for d in range(N)]
    assert in_links == [sorted(s for s in range(N) if d in ADJACENCY[s]) for d in range(N)]
    assert arrays["out_counts"].tolist() == [len(targets) for targets in ADJACENCY]

    # The spelling vocabulary: forms written in the titles and bodies of two or more documents.
    raw, offsets = arrays["vocab_bytes"].tobytes(), arrays["vocab_offsets"].tolist()
    forms = [raw[a:b].decode() for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    vocabulary = dict(zip(forms, arrays["vocab_df"].tolist(), strict=True))
    assert forms == sorted(forms) and vocabulary["rain"] == 3 and vocabulary["water"] == 2
    assert "sunny" not in vocabulary and "clouds" not in vocabulary  # one document each
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


def build_twice_and_check(settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter) -> BuildResult:
    """Build, check segment and database, build again; returns the second build."""
    store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    corpus_writer(store, settings.database_url, CORPUS)
    first = build_index(settings, progress=False)
    assert (first.num_docs, first.num_terms) == (N, len(expected_postings()))
    assert first.segment.startswith("index/segment-") and first.segment.endswith(".nseg")
    assert first.pagerank_delta < settings.index.pagerank_tolerance
    arrays = check_segment(settings, first.segment, tmp_path)
    check_database(settings, first, np.asarray(arrays["pagerank"]))

    second = build_index(settings, progress=False)
    assert second.version_id != first.version_id and second.segment != first.segment
    check_database(settings, second, np.asarray(arrays["pagerank"]))
    assert store.exists(first.segment) and store.exists(second.segment)
    assert not any((settings.var_dir / "mr").iterdir())  # scratch removed after success
    return second


@pytest.mark.parametrize("engine", ["memory", "mapreduce"])
def test_build_index_on_file_store_and_sqlite(
    settings: Settings,
    tmp_path: Path,
    corpus_writer: CorpusWriter,
    capsys: pytest.CaptureFixture[str],
    engine: str,
) -> None:
    tuned = settings.with_overrides(
        pagerank_tolerance=1e-10, pagerank_max_iterations=200, pagerank_engine=engine
    )
    second = build_twice_and_check(tuned, tmp_path, corpus_writer)
    assert second.pagerank_delta < tuned.index.pagerank_tolerance
    assert capsys.readouterr().err == ""  # progress=False prints nothing


def test_build_index_on_moto_s3_and_mariadb(
    moto_server: str, s3_bucket: str, mysql_url: str, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    settings = Settings.of(
        database_url=mysql_url,
        blob_url=f"s3://{s3_bucket}/nimbus",
        aws_endpoint_url=moto_server,
        mr_runner="inline",
        var_dir=tmp_path / "var",
        pagerank_tolerance=1e-10,
        pagerank_max_iterations=200,
    )
    second = build_twice_and_check(settings, tmp_path, corpus_writer)
    assert second.segment.startswith("index/segment-") and second.num_docs == N


def test_build_reports_stages_on_stderr(
    settings: Settings, corpus_writer: CorpusWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, CORPUS[:1])
    result = build_index(settings.with_overrides(pagerank_max_iterations=3))
    err = capsys.readouterr().err
    for stage in ("1/4 link graph", "2/4 index", "3/4 pagerank", "4/4 publish", result.segment):
        assert stage in err
    assert result.pagerank_iterations == 3 and result.num_docs == 3


def test_build_without_documents_says_crawl_first(settings: Settings) -> None:
    with pytest.raises(BuildError, match="crawl first: nimbus crawl URL"):
        build_index(settings, progress=False)


def test_host_level_pagerank_shares_each_hosts_rank_over_its_pages(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, CORPUS)
    result = build_index(
        settings.with_overrides(pagerank_level="host", pagerank_tolerance=1e-12), progress=False
    )
    store = open_blobstore(settings.blob_url)
    arrays, _meta = open_segment(store.download(result.segment, tmp_path / "host.nseg"))
    pr = arrays["pagerank"]
    # Hosts: news.test (docs 0-2) and wiki.test (3-5); the only link between hosts is
    # wiki -> news (3 -> 0). Two-node PageRank: news = (1 + d) / (2 + d) with the
    # dangling news host's mass spread evenly, wiki = 1 / (2 + d); shared over 3 pages.
    d = settings.index.pagerank_damping
    assert pr[:3].tolist() == pytest.approx([(1 + d) / (2 + d) / 3] * 3, rel=1e-9)
    assert pr[3:].tolist() == pytest.approx([1 / (2 + d) / 3] * 3, rel=1e-9)
