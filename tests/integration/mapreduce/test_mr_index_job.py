"""The MapReduce jobs on tiny crawls with known answers (inline), plus one
local-runner smoke test that proves the shipped package zip is enough."""

from __future__ import annotations

import gzip
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mapreduce.mr_index import MRIndex
from mapreduce.mr_linkgraph import MRLinkGraph, adjacency_rows, name_line
from mapreduce.postings_wire import Chunk
from mapreduce.task_progress import records_read
from services.config import Settings
from services.indexing.index_rows import index_columns, read_index_rows
from services.indexing.job_pieces import piece_columns
from services.indexing.job_progress import JobProgress
from services.indexing.manifest import write_manifest_parts
from services.indexing.pagerank_driver import run_pagerank
from services.indexing.runner import (
    JobError,
    JobOutput,
    run_job,
    shared_package_zip,
    task_packages_folder,
    write_rows,
)
from services.indexing.segment_stream import streamed_segment
from services.ranking.pagerank import adjacency_from_mapping, pagerank_sparse
from services.storage.blobs.blobstore import open_blobstore
from services.storage.sql.engines import make_engine, session_factory
from services.text.urls import url_id
from tests.networkx_reference import networkx_pagerank

FRUIT = [
    [
        {"url": "http://fruit.test/apples", "title": "Red apples", "text": "apples and pears"},
        {"url": "http://fruit.test/pears", "title": "Pears", "text": "green pears, red pears"},
    ],
    [{"url": "http://sky.test/", "description": "Sky blue", "text": "The sky"}],
]
# By hand: term -> doc -> [tf title, tf body, tf anchor, tf url, tf meta, positions]. Stems:
# apples -> appl, pears -> pear; "and", "the" are stop words. Positions count
# title terms, skip one, then body terms; URL words ("fruit test apples") have none.
FRUIT_POSTINGS = {
    "red": {0: [1, 0, 0, 0, 0, [0]], 1: [0, 1, 0, 0, 0, [4]]},
    "appl": {0: [1, 1, 0, 1, 0, [1, 3]]},
    "pear": {0: [0, 1, 0, 0, 0, [4]], 1: [1, 2, 0, 1, 0, [0, 3, 5]]},
    "green": {1: [0, 1, 0, 0, 0, [2]]},
    "fruit": {0: [0, 0, 0, 1, 0, []], 1: [0, 0, 0, 1, 0, []]},
    "test": {0: [0, 0, 0, 1, 0, []], 1: [0, 0, 0, 1, 0, []], 2: [0, 0, 0, 1, 0, []]},
    "sky": {2: [0, 1, 0, 1, 1, [1]]},  # the description is the meta field: no positions
    "blue": {2: [0, 0, 0, 0, 1, []]},
}
FRUIT_LENGTHS = {0: [2, 2, 0, 3, 0], 1: [1, 4, 0, 3, 0], 2: [0, 1, 0, 2, 2]}  # title, body, anchor, url, meta
CorpusWriter = Callable[..., list]


def manifest(tmp_path: Path, num_blocks: int = 2) -> Path:
    """The job input: the names of the blocks the corpus writer stored."""
    path = tmp_path / "manifest.txt"
    path.write_text("".join(f"records/test-{b:03d}.rec.gz\n" for b in range(num_blocks)))
    return path


def index_output(output: JobOutput, vocabulary: dict | None = None) -> tuple[dict, dict]:
    """{term: {doc: [tf fields..., positions]}} and {doc: field lengths} from MRIndex rows
    (written forms and their document counts into ``vocabulary`` when given)."""
    postings, lengths = {}, {}
    vocabulary = {} if vocabulary is None else vocabulary
    for (kind, name), value in read_index_rows(output.path):
        if kind == "t":
            docs, *fields, counts, positions = Chunk.decode(value).as_lists()
            assert docs == sorted(docs)  # ascending doc numbers
            # title, body, anchor, url, meta; the nav field (menus, link lists, forms) is
            # empty in these pages
            *kept, nav = fields
            assert len(kept) == 5 and not any(nav)
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            postings[name] = {
                d: [*(f[i] for f in kept), positions[starts[i] : starts[i + 1]]] for i, d in enumerate(docs)
            }
        elif kind == "l":
            *lengths[name], nav_length = value
            assert nav_length == 0
        elif kind == "v":
            vocabulary[name] = value
    return postings, lengths


def test_mr_index_inline_postings_and_lengths(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, FRUIT)
    out = run_job(
        MRIndex, [manifest(tmp_path)], settings, output=tmp_path / "index.jsonl", scratch=tmp_path / "scratch"
    )
    vocabulary: dict = {}
    postings, lengths = index_output(out, vocabulary)
    assert postings == FRUIT_POSTINGS
    assert lengths == FRUIT_LENGTHS
    # Every written form of the titles and bodies, with the documents holding it.
    assert vocabulary == {"apples": 1, "blue": 1, "green": 1, "pears": 2, "red": 2, "sky": 1}
    assert out.counter("blocks", "records") == 3
    assert out.counter("index", "postings") == 13
    assert out.counter("index", "terms") == len(FRUIT_POSTINGS)  # one row per term: df = its length


def test_anchor_text_of_in_links_becomes_the_targets_anchor_field(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    pages = [
        [
            {
                "url": "http://a.test/",
                "title": "Home",
                "text": "welcome",
                "links": ["http://a.test/wing", "http://a.test/"],
            },
            {"url": "http://a.test/wing", "title": "W", "text": "lift", "links": ["http://a.test/nowhere"]},
        ]
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, pages)
    links = run_job(
        MRLinkGraph,
        [manifest(tmp_path, 1)],
        settings,
        output=tmp_path / "links.jsonl",
        scratch=tmp_path / "scratch",
    )
    # corpus_writer gives every link the anchor text "anchor"; the home page's self-link
    # is skipped and the link to an uncrawled page goes nowhere.
    assert [line for line in links.path.read_text().splitlines() if line.startswith("@")] == [
        '@anchor\t1\t"anchor"\ten'  # the target's language, in which MRIndex analyzes the text
    ]
    assert dict(adjacency_rows(links.path)) == {0: [1], 1: []}
    out = run_job(
        MRIndex,
        [manifest(tmp_path, 1), links.path],
        settings,
        output=tmp_path / "index.jsonl",
        scratch=tmp_path / "scratch",
    )
    postings, lengths = index_output(out)
    assert postings["anchor"] == {1: [0, 0, 1, 0, 0, []]}
    assert postings["lift"] == {1: [0, 1, 0, 0, 0, [2]]}  # title "w" at 0, gap, body
    assert lengths[1] == [1, 1, 1, 2, 0] and lengths[0] == [1, 1, 0, 1, 0]  # "a" is a stop word


def test_mr_index_names_a_missing_block(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "manifest.txt"
    path.write_text("records/missing.rec.gz\n")
    with pytest.raises(JobError, match="records/missing.rec.gz"):
        run_job(MRIndex, [path], settings, output=tmp_path / "o", scratch=tmp_path / "s")


def test_mr_index_refuses_a_document_twice_in_one_task(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    """Two versions of doc 0 in one block, and a bare manifest line (every record): the
    map task sees the document twice and says so, instead of merging the versions."""
    corpus_writer(
        open_blobstore(settings.blob_url),
        settings.database_url,
        [[FRUIT[0][0], {**FRUIT[0][1], "recrawl_of": 0}]],
    )
    with pytest.raises(JobError, match="doc_num 0 occurs in two records"):
        run_job(MRIndex, [manifest(tmp_path, 1)], settings, output=tmp_path / "o", scratch=tmp_path / "s")


def test_mr_linkgraph_inline_adjacency(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    blocks = [
        [
            {
                "url": "http://a.test/",
                "links": [
                    "http://b.test/",
                    "http://B.test:80/",  # the same page twice: one edge
                    "http://c.test/",
                    "http://a.test/",  # a self-link: dropped
                    "http://nowhere.test/x",
                ],
            },  # never crawled: dropped
            {"url": "http://b.test/", "links": ["http://c.test/"]},
        ],
        [
            {"url": "http://c.test/"},  # dangling
            {"url": "http://d.test/", "links": ["http://a.test/", "http://gone.test/"]},
        ],
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, blocks)
    out = run_job(
        MRLinkGraph,
        [manifest(tmp_path)],
        settings,
        output=tmp_path / "links.jsonl",
        scratch=tmp_path / "scratch",
    )
    assert dict(adjacency_rows(out.path)) == {0: [1, 2], 1: [2], 2: [], 3: [0]}
    assert out.counters["linkgraph"] == {
        "links_to_uncrawled": 2,
        "self_links_dropped": 1,
        "duplicate_edges_dropped": 1,
        "edges": 4,
        "documents_with_anchor_text": 3,
    }


def names_file(tmp_path: Path, names: list[tuple[str, int, str]]) -> Path:
    """A gzip file of name lines: (URL naming a document, its doc_num, the alias's title)."""
    path = tmp_path / "names.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(name_line(url_id(url), doc, title) for url, doc, title in names)
    return path


def test_links_through_other_names_count_for_the_document_with_their_anchor_text(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    """A link to an alias or a duplicate URL is an edge to the document and its anchor text is
    the document's; an alias's title is anchor text too; a URL that is a document itself
    stays that document whatever names it; a name whose page links to it is a self-link."""
    blocks = [
        [
            {"url": "http://a.test/", "links": ["http://old-b.test/", "http://copy-c.test/"]},
            {"url": "http://b.test/", "links": ["http://old-b.test/", "http://d.test/"]},
        ],
        [{"url": "http://c.test/"}, {"url": "http://d.test/", "links": ["http://b.test/"]}],
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, blocks)
    names = names_file(
        tmp_path,
        [
            ("http://old-b.test/", 1, "Bee"),  # an alias with a title (a wiki redirect)
            ("http://copy-c.test/", 2, ""),  # a duplicate URL
            ("http://d.test/", 0, "Not d"),  # d is a document: the name is ignored
            ("http://unlinked.test/", 3, "Dee"),  # linked by nobody: its title still counts
        ],
    )
    out = run_job(
        MRLinkGraph,
        [manifest(tmp_path), names],
        settings,
        output=tmp_path / "links.jsonl",
        scratch=tmp_path / "scratch",
    )
    assert dict(adjacency_rows(out.path)) == {0: [1, 2], 1: [3], 2: [], 3: [1]}
    anchors = sorted(line for line in out.path.read_text().splitlines() if line.startswith("@"))
    # Alias titles first (no source page), then the in-links' anchors by source; each line
    # with the document's language, which only its own URL's reducer knows.
    assert anchors == [
        '@anchor\t1\t"Bee | anchor | anchor"\ten',
        '@anchor\t2\t"anchor"\ten',
        '@anchor\t3\t"Dee | anchor"\ten',
    ]
    assert out.counters["linkgraph"]["links_through_other_names"] == 2
    assert out.counters["linkgraph"]["self_links_dropped"] == 1  # b's link to its own alias
    assert out.counters["linkgraph"]["alias_titles"] == 2


def test_pagerank_driver_inline_matches_networkx(settings: Settings, tmp_path: Path) -> None:
    # Docs 3, 7 are dangling; 9 and 10 are absent from the link graph (no record
    # was read for them) and must still be pages, dangling ones.
    graph = {0: [1, 2, 3], 1: [2], 2: [0, 4], 3: [], 4: [5, 6], 5: [0, 7], 6: [4, 8], 7: [], 8: [9]}
    adjacency_path = tmp_path / "adjacency.jsonl"
    write_rows(adjacency_path, iter(sorted(graph.items())))
    tuned = settings.with_overrides(pagerank_tolerance=1e-10, pagerank_max_iterations=300)
    lines: list[str] = []
    result = run_pagerank(adjacency_path, 11, tuned, tmp_path / "pr", progress=lines.append)

    adjacency = adjacency_from_mapping(graph, 11)
    assert np.abs(result.ranks - networkx_pagerank(adjacency, tuned.index.pagerank_damping)).max() < 1e-6
    assert result.ranks.sum() == pytest.approx(1.0, abs=1e-9)
    assert result.delta < 1e-10
    reference = pagerank_sparse(adjacency, tuned.index.pagerank_damping, 1e-10, 300)
    assert abs(result.iterations - reference.iterations) <= 1  # same stopping rule
    assert len(lines) == result.iterations


def test_pagerank_driver_stops_at_max_iterations(settings: Settings, tmp_path: Path) -> None:
    adjacency_path = tmp_path / "adjacency.jsonl"
    write_rows(adjacency_path, iter([(0, [1]), (1, [0, 2]), (2, [])]))
    capped = settings.with_overrides(pagerank_tolerance=1e-30, pagerank_max_iterations=4)
    result = run_pagerank(adjacency_path, 3, capped, tmp_path / "pr")
    reference = pagerank_sparse([[1], [0, 2], []], capped.index.pagerank_damping, 1e-30, 4)
    assert result.iterations == 4
    assert result.ranks == pytest.approx(reference.ranks, abs=1e-15)
    assert result.delta == pytest.approx(reference.delta, rel=1e-9)


def hermetic_args() -> list[str]:
    """Task switches: ``python -S`` (no site hooks: no editable finder) and on PYTHONPATH only
    the zip the local runner ships (the same one it names) and the third-party packages."""
    folder = task_packages_folder()
    assert folder is not None  # XDG_CACHE_HOME is this test run's (conftest.py)
    shipped = shared_package_zip(folder)
    site_packages = sysconfig.get_paths()["purelib"]
    return ["--task-python-bin", f"{sys.executable} -S", "--cmdenv", f"PYTHONPATH={shipped}:{site_packages}"]


def test_mr_index_local_runner_imports_only_the_shipped_zip(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    """The local runner's tasks are separate processes. This venv has the project
    installed in editable mode, which would hide a broken zip, so the tasks run
    with ``python -S`` (no site hooks: no editable finder) and only the
    third-party packages on PYTHONPATH: ``services``/``mapreduce`` must come
    from the zip the runner ships, as on EMR. The crawl holds a superseded
    version of doc 0 and the manifest comes from the documents table (tab-separated
    lines), so the tasks' skipping of stale records is exercised too."""
    recrawled = [
        [{"url": "http://fruit.test/apples", "title": "Old", "text": "quinces"}, FRUIT[0][1]],
        [{**FRUIT[0][0], "recrawl_of": 0}],
        FRUIT[1],
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, recrawled)
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        # As the build writes it: gzip parts, one block each (one map task per part).
        parts, blocks, _ = write_manifest_parts(session, tmp_path)
        # Fewer parts than blocks: contiguous runs of blocks, in name (= doc_num) order, dealt
        # by current records (one each here: records 0 and 1 to the first part, 2 to the second).
        (tmp_path / "halves").mkdir()
        halves, _, _ = write_manifest_parts(session, tmp_path / "halves", parts=2)
    engine.dispose()
    named = [
        [line.split("\t")[0] for line in gzip.decompress(h.read_bytes()).decode().splitlines()]
        for h in halves
    ]
    assert [len(h) for h in named] == [2, 1] and sorted(sum(named, [])) == sum(named, [])
    assert len(parts) == blocks == 3 and all(p.name.endswith(".gz") for p in parts)
    hermetic = hermetic_args()
    local = settings.with_overrides(mr_runner="local")
    links = run_job(
        MRLinkGraph,
        parts,
        local,
        output=tmp_path / "links.jsonl",
        scratch=tmp_path / "scratch",
        extra_args=hermetic,
    )
    assert links.counter("blocks", "read") == 3 and "@anchor" not in links.path.read_text()
    out = run_job(
        MRIndex,
        [*parts, links.path],
        local,
        output=tmp_path / "index.jsonl",
        scratch=tmp_path / "scratch",
        extra_args=hermetic,
    )
    postings, lengths = index_output(out)
    assert postings == FRUIT_POSTINGS  # no "quinc", no "old"
    assert lengths == FRUIT_LENGTHS
    assert out.counter("blocks", "stale_records_skipped") == 1


def test_linkgraph_and_pagerank_iterations_on_the_local_runner(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter
) -> None:
    """MRLinkGraph and MRPageRankStep in separate task processes (``-r local``); the link
    graph's tasks import the project only from the shipped zip, as the index job above.
    Three PageRank iterations equal three in-memory power iterations on the same graph; b's
    link to an alias of a (a name line, the build's second input) is an edge to a there too."""
    blocks = [
        [
            {"url": "http://a.test/", "links": ["http://b.test/", "http://c.test/"]},
            {"url": "http://b.test/", "links": ["http://c.test/", "http://old-a.test/"]},
        ],
        [
            {"url": "http://c.test/", "links": ["http://a.test/"]},
            {"url": "http://d.test/"},
        ],  # dangling, and nobody links to it: the 4-node graph
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, blocks)
    hermetic = hermetic_args()
    local = settings.with_overrides(mr_runner="local", pagerank_tolerance=1e-30, pagerank_max_iterations=3)
    links = run_job(
        MRLinkGraph,
        [manifest(tmp_path), names_file(tmp_path, [("http://old-a.test/", 0, "Old a")])],
        local,
        output=tmp_path / "links.jsonl",
        scratch=tmp_path / "scratch",
        extra_args=hermetic,
    )
    assert dict(adjacency_rows(links.path)) == {0: [1, 2], 1: [0, 2], 2: [0], 3: []}
    result = run_pagerank(links.path, 4, local, tmp_path / "pr")
    reference = pagerank_sparse([[1, 2], [0, 2], [0], []], local.index.pagerank_damping, 1e-30, 3)
    assert result.iterations == 3
    assert result.ranks == pytest.approx(reference.ranks, abs=1e-12)


@pytest.mark.parametrize("runner", ["inline", "local"])
def test_mr_index_map_only_pieces_publish_as_the_reducers_output(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter, runner: str
) -> None:
    """``--map-only``: no reducer; each map task's file is kept (``parts``) and the publisher
    joins the pieces (``job_pieces``). The anchor text is read by a task of its own, and the
    word "anchor" is on page 1 too: its page and anchor postings are merged at publish as the
    reducer merges them. The segment is the reducer's output's, array for array."""
    pages = [
        [
            {"url": "http://a.test/", "title": "Home", "text": "welcome", "links": ["http://a.test/wing"]},
            {"url": "http://a.test/wing", "title": "W", "text": "lift anchor", "links": ["http://a.test/"]},
        ],
        [
            {
                "url": "http://b.test/",
                "title": "Anchor",
                "text": "welcome lift",
                "links": ["http://a.test/wing"],
            }
        ],
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, pages)
    chosen = settings.with_overrides(mr_runner=runner)
    scratch = tmp_path / "scratch"
    links = run_job(
        MRLinkGraph, [manifest(tmp_path)], chosen, output=tmp_path / "links.jsonl", scratch=scratch
    )
    inputs = [manifest(tmp_path), links.path]
    reduced = run_job(MRIndex, inputs, chosen, output=tmp_path / "index.jsonl", scratch=scratch)
    pieces = run_job(
        MRIndex,
        inputs,
        chosen,
        output=tmp_path / "parts",
        scratch=scratch,
        extra_args=["--map-only"],
        parts=True,
    )
    assert len(pieces.parts) >= 2 and all(p.parent == tmp_path / "parts" for p in pieces.parts)
    assert pieces.counter("index", "postings") == reduced.counter("index", "postings")
    want_cols, want_terms = index_columns(reduced.path)
    cols, terms = piece_columns(pieces.parts)
    anchor = terms.terms.index(b"anchor")
    assert int(np.diff(terms.piece_bounds)[anchor]) >= 2  # the pages' task's and the anchors'
    assert terms.terms == want_terms.terms and cols.lengths == want_cols.lengths
    assert cols.forms == want_cols.forms and cols.vocabulary == want_cols.vocabulary
    ranks = np.full(3, 1 / 3)
    want = streamed_segment(want_terms, want_cols, ranks, 3)
    got = streamed_segment(terms, cols, ranks, 3)
    assert list(got) == list(want)
    for name, value in want.items():
        assert got[name].tobytes() == value.tobytes(), name


def test_only_this_machines_runners_keep_parts(settings: Settings, tmp_path: Path) -> None:
    emr = settings.with_overrides(mr_runner="emr")
    with pytest.raises(JobError, match="emr runner's output is not local files"):
        run_job(MRIndex, [tmp_path / "m"], emr, output=tmp_path / "parts", scratch=tmp_path / "s", parts=True)


@pytest.mark.parametrize("runner", ["inline", "local"])
def test_a_block_dealt_to_several_tasks_indexes_as_one_task_reading_it_whole(
    settings: Settings, tmp_path: Path, corpus_writer: CorpusWriter, runner: str
) -> None:
    """Parts even by records (``write_manifest_parts``) deal the first block to three map
    tasks by its positions; a page recrawled within the block leaves a stale record there.
    The link graph, the index and the counters are those of one task reading it whole."""
    pages = [
        {
            "url": f"http://big.test/{i}",
            "title": f"Page {i}",
            "text": f"word{i} shared",
            "links": [f"http://big.test/{(i + 1) % 6}", "http://small.test/"],
        }
        for i in range(6)
    ]
    older = {"url": "http://big.test/1", "title": "Page 1", "text": "older words"}  # doc 1, then
    first = [pages[0], older, pages[2], {**pages[1], "recrawl_of": 1}, *pages[3:]]  # its recrawl
    blocks = [first, [{"url": "http://small.test/", "title": "Small", "text": "shared tail"}]]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, blocks)
    engine = make_engine(settings.database_url)
    with session_factory(engine)() as session:
        (tmp_path / "one").mkdir()
        (tmp_path / "three").mkdir()
        whole, _, _ = write_manifest_parts(session, tmp_path / "one", parts=1)
        dealt, block_count, _ = write_manifest_parts(session, tmp_path / "three", parts=3)
    engine.dispose()
    lines = [gzip.decompress(p.read_bytes()).decode().splitlines() for p in dealt]
    spans = [line.split("\t")[2] for part in lines for line in part if line.count("\t") == 2]
    assert block_count == 2 and len(spans) >= 2 and spans[0].startswith("0-") and spans[-1].endswith("-")
    assert all("@" in span for span in spans)  # the records' bytes: each task reads its own
    chosen = settings.with_overrides(mr_runner=runner)
    results = []
    for name, inputs in (("one", whole), ("three", dealt)):
        scratch = tmp_path / f"scratch-{name}"
        links = run_job(MRLinkGraph, inputs, chosen, output=tmp_path / f"links-{name}.jsonl", scratch=scratch)
        out = run_job(
            MRIndex, [*inputs, links.path], chosen, output=tmp_path / f"index-{name}.jsonl", scratch=scratch
        )
        counters = {k: out.counter("blocks", k) for k in ("records", "stale_records_skipped")}
        results.append((dict(adjacency_rows(links.path)), index_output(out), counters))
    assert results[0] == results[1]
    graph, (postings, _lengths), counters = results[0]
    assert graph[1] == [2, 6] and "older" not in postings and "word1" in postings
    if runner == "local":  # the inline runner keeps no counters
        assert counters == {"records": 7, "stale_records_skipped": 1}


@pytest.mark.parametrize("runner", ["inline", "local"])
def test_the_index_tasks_say_how_many_records_they_have_read(
    settings: Settings,
    tmp_path: Path,
    corpus_writer: CorpusWriter,
    runner: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--progress-dir``: each task writes its count of records read (``task_progress``),
    the last at its end, so the folder sums to every record; the build's line, said every
    few seconds while the job runs (``job_progress``), reads them."""
    pages = [
        [{"url": f"http://p.test/{i}", "title": f"P{i}", "text": f"word{i}"} for i in range(b, b + 3)]
        for b in (0, 3)
    ]
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, pages)
    folder = tmp_path / "progress"
    lines: list[str] = []
    monkeypatch.setattr("services.indexing.job_progress.SAY_EVERY", 0.001)
    with JobProgress(folder, 6, lines.append):
        run_job(
            MRIndex,
            [manifest(tmp_path)],
            settings.with_overrides(mr_runner=runner),
            output=tmp_path / "parts",
            scratch=tmp_path / "scratch",
            extra_args=["--map-only", f"--progress-dir={folder}"],
            parts=True,
        )
    assert records_read(folder) == 6
    assert all(" of 6 records read" in line for line in lines)
