"""Build and publish an index from everything crawled so far.

Stages: manifest (per record block, the documents whose current record it
holds, so stale versions left by recrawls are skipped) and the documents'
other names (duplicate URLs, aliases: ``url_names``) ->
MRLinkGraph (adjacency, in-link anchor text, links through the other names) -> MRIndex (postings with
fields and positions, lengths) -> PageRank
iterations (in memory, or one MRPageRankStep job per iteration when
``settings.index.pagerank_engine`` is "mapreduce") -> publish (the segment's
arrays made a term range at a time, ``segment_stream``, to the blob store; PageRank rows
and the active version to the database). Each job
runs on ``settings.index.mr_runner``;
intermediate files live in a scratch directory under ``settings.var_dir``,
removed after a successful build and kept after a failure for inspection.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import func, select

from mapreduce.mr_index import OUT_LINKS, MRIndex
from mapreduce.mr_linkgraph import MRLinkGraph, adjacency_rows, write_anchor_lines
from services.config import Settings
from services.indexing.commit_mark import commit_mark
from services.indexing.emr_options import show_emr_progress
from services.indexing.errors import BuildError
from services.indexing.graph_input import graph_input
from services.indexing.index_rows import TermSource, index_columns
from services.indexing.job_pieces import piece_columns
from services.indexing.job_progress import JobProgress
from services.indexing.link_probe import sample_has_links
from services.indexing.manifest import manifest_parts, write_manifest_parts
from services.indexing.pagerank_driver import run_pagerank
from services.indexing.publish import publish_segment
from services.indexing.runner import JobOutput, kernel_cache_lasts, run_job
from services.indexing.segment_arrays import import_forward_index_tools, segment_meta
from services.indexing.segment_stream import streamed_segment
from services.indexing.url_facts import host_count, url_facts
from services.indexing.url_names import write_name_lines
from services.ranking.pagerank import PageRankResult, adjacency_from_mapping, host_pagerank, pagerank_sparse
from services.storage.blobs.blobstore import open_blobstore
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db


@dataclass
class BuildResult:
    version_id: int
    segment: str  # blob name of the published segment
    num_docs: int
    num_terms: int
    num_postings: int
    pagerank_iterations: int
    pagerank_delta: float
    seconds: float
    near_duplicates: int = 0  # documents folded into a near-identical one (services.text.analysis.minhash)


def run_index_jobs(
    settings: Settings,
    manifest: list[Path],
    graph_input: list[Path],
    scratch: Path,
    say: Callable[[str], None],
    *,
    links_expected: bool = True,
    map_only: bool = False,
    records: int | None = None,
) -> tuple[JobOutput, JobOutput]:
    """MRLinkGraph (over ``graph_input``: the manifest and the name lines) then MRIndex (over
    the manifest and the anchor text): the full build's stages 1 and 2, and an incremental
    update's whole job work. Returns (link graph, index) outputs.

    ``links_expected`` False (``link_probe``: a sample of the records links nowhere, and no
    alias has a title; ``graph_input`` must then read the manifest's records): MRIndex first,
    counting the records' links. None counted, and the link graph is empty, with no anchor
    text: its job is skipped, its output an empty file. Some counted: the link graph runs,
    and MRIndex again only if it found anchor text. The outputs are the usual order's.

    ``map_only`` (this machine's runners): MRIndex without its reducer, its output each map
    task's file (``JobOutput.parts``), whose pieces the publisher joins (``job_pieces``).
    ``records``: the records the manifest lists, for the progress line's ETA."""
    index: JobOutput | None = None
    if not links_expected:
        index = _index_job(settings, manifest, scratch, say, "1/4", map_only, records)
        if index.counter("blocks", "read") and not index.counter(*OUT_LINKS):
            say("2/4 link graph: no record links anywhere and no alias has a title: no link graph to build")
            empty = scratch / "links.jsonl"
            empty.write_bytes(b"")
            return JobOutput(path=empty), index
        say(f"    {index.counter(*OUT_LINKS)} links in the records: the link graph after all")
    links = _link_graph_job(settings, graph_input, scratch, say, "2/4" if index else "1/4")
    anchors = scratch / "anchors.txt"
    if write_anchor_lines(links.path, anchors):
        index = _index_job(settings, [*manifest, anchors], scratch, say, "2/4", map_only, records)
    elif index is None:
        index = _index_job(settings, manifest, scratch, say, "2/4", map_only, records)
    return links, index


def _link_graph_job(
    settings: Settings, graph_input: list[Path], scratch: Path, say: Callable[[str], None], stage: str
) -> JobOutput:
    say(f"{stage} link graph and in-link anchor text")
    links = run_job(MRLinkGraph, graph_input, settings, output=scratch / "links.jsonl", scratch=scratch)
    say(
        f"    {links.counter('linkgraph', 'edges')} edges, "
        f"{links.counter('linkgraph', 'links_to_uncrawled')} links to uncrawled pages "
        f"dropped, {links.counter('linkgraph', 'links_through_other_names')} through aliases "
        f"and duplicate URLs, {links.counter('linkgraph', 'documents_with_anchor_text')} "
        f"documents with anchor text ({links.seconds:.1f} s)"
    )
    return links


def _index_job(
    settings: Settings,
    inputs: list[Path],
    scratch: Path,
    say: Callable[[str], None],
    stage: str,
    map_only: bool = False,
    records: int | None = None,
) -> JobOutput:
    """MRIndex over ``inputs``; on this machine's runners with a progress line every few
    seconds (``job_progress``: the ``records`` to read, when known, give the ETA)."""
    say(f"{stage} index: terms, fields and positions")
    local = settings.index.mr_runner in ("inline", "local")
    folder = scratch / "index-progress" / uuid.uuid4().hex[:12]  # this run of the job's own
    watch = [f"--progress-dir={folder}"] if local else []
    with JobProgress(folder, records, say) if local else contextlib.nullcontext():
        if map_only:
            index = run_job(
                MRIndex,
                inputs,
                settings,
                output=scratch / "index-parts",
                scratch=scratch,
                # numba's cache of the tokens' kernel outlives the build where the tasks' code has
                # a lasting path (services.indexing.runner); elsewhere they number in Python.
                extra_args=[
                    "--map-only",
                    *(["--compiled-tokens"] if kernel_cache_lasts(settings) else []),
                    *watch,
                ],
                parts=True,
            )
            terms = "pieces joined at publish"
        else:
            index = run_job(
                MRIndex, inputs, settings, output=scratch / "index.jsonl", scratch=scratch, extra_args=watch
            )
            terms = f"{index.counter('index', 'terms')} terms"
    say(
        f"    {index.counter('blocks', 'records')} records, {terms}, "
        f"{index.counter('index', 'postings')} postings, "
        f"{index.counter('blocks', 'stale_records_skipped')} superseded versions skipped "
        f"({index.seconds:.1f} s)"
    )
    return index


def progress_lines(stage: str, progress: bool, report: Callable[[str], None] | None) -> Callable[[str], None]:
    """Where a build's or an update's progress lines go: ``report`` when given (the indexer's
    daemon keeps them in the build's row), else stderr unless ``progress`` is off."""

    def say(message: str) -> None:
        if report is not None:
            report(f"{stage}: {message}")
        elif progress:
            print(f"{stage}: {message}", file=sys.stderr, flush=True)

    return say


def compute_pagerank(
    settings: Settings,
    doc_hosts: np.ndarray,
    links: Path,
    num_docs: int,
    scratch: Path,
    say: Callable[[str], None],
    progress: bool,
) -> tuple[dict[int, list[int]], PageRankResult]:
    """Stage 3: PageRank over MRLinkGraph's adjacency (``links``), in memory or as MapReduce
    steps, page or host level (``doc_hosts``: each document's host id, ``url_facts``), as the
    settings say. Returns (the link graph, kept in the
    segment for page info, and the ranks)."""
    say(
        f"3/4 pagerank ({settings.index.pagerank_engine}, d={settings.index.pagerank_damping}, tolerance "
        f"{settings.index.pagerank_tolerance:g}, at most {settings.index.pagerank_max_iterations})"
    )
    graph = dict(adjacency_rows(links))
    if settings.index.pagerank_level == "host" or settings.index.pagerank_engine == "memory":
        # The host graph is small (hosts, not pages): it always runs in memory.
        adjacency = adjacency_from_mapping(graph, num_docs)
        iteration = (
            settings.index.pagerank_damping,
            settings.index.pagerank_tolerance,
            settings.index.pagerank_max_iterations,
        )
        if settings.index.pagerank_level == "host":
            num_hosts = host_count(doc_hosts)
            ranks = host_pagerank(adjacency, doc_hosts, num_hosts, *iteration)
            say(f"    host level: {num_hosts} hosts")
        else:
            ranks = pagerank_sparse(adjacency, *iteration)
    else:
        ranks = run_pagerank(
            links,
            num_docs,
            settings,
            scratch,
            progress=(lambda line: say("    " + line)) if progress else None,
        )
    say(f"    {ranks.iterations} iterations, L1 change {ranks.delta:.3g}")
    return graph, ranks


def build_index(
    settings: Settings, *, progress: bool = True, report: Callable[[str], None] | None = None
) -> BuildResult:
    """Run the MapReduce jobs over the crawl and publish the result as the active index.

    Progress lines (stages, counts, EMR's cluster and step states) go to stderr, or to
    ``report`` when given (the indexer's daemon keeps them in the build's row)."""
    started = time.monotonic()
    say = progress_lines("build", progress, report)
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        sessions = session_factory(engine)
        with sessions() as session:
            count, max_doc = session.execute(select(func.count(), func.max(Document.doc_num))).one()
            removed = session.scalar(select(func.count()).where(Document.removed_at.is_not(None))) or 0
        if not count:
            raise BuildError(f"no documents in {settings.database_url}: crawl first: nimbus crawl URL")
        num_docs = int(max_doc) + 1  # doc_nums are dense from 0
        if count != num_docs:
            say(f"warning: {count} documents but doc_nums reach {max_doc}; gaps index as empty")
        if removed:
            say(
                f"{removed} documents left out: a recrawl found them gone or noindex, or a purge removed them"
            )
            count -= removed

        build_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        scratch = (settings.var_dir / "mr" / f"build-{build_id}").resolve()
        scratch.mkdir(parents=True, exist_ok=True)
        with sessions() as session:
            mark = commit_mark(session)  # before the documents: later commits are newer
            written = write_manifest_parts(session, scratch, manifest_parts(settings))
            manifest, blocks = written.paths, written.blocks
            # A crawl committing meanwhile may have added documents past max_doc: count them.
            num_docs = max(num_docs, written.docs_end)
            names = write_name_lines(session, scratch / "names.txt.gz", below=num_docs)
        say(
            f"{count} documents in {blocks} record blocks; "
            f"runner {settings.index.mr_runner}, scratch {scratch}"
        )
        if names.lines or names.unresolved:
            say(
                f"{names.duplicates} duplicate URLs and {names.aliases} aliases name documents "
                f"({names.unresolved} aliases of pages not stored)"
            )

        if settings.index.mr_runner == "emr" and (progress or report is not None):
            show_emr_progress(say)
        graph_parts = graph_input(manifest, scratch / "names.txt.gz", names.lines, scratch)
        store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        expected = names.aliases > 0 or sample_has_links(store, manifest)
        # This machine's runners: MRIndex without its reducer, its pieces joined at publish
        # (job_pieces); EMR keeps the reducer (mapreduce.mr_index).
        map_only = settings.index.mr_runner in ("inline", "local")
        # The documents' URL forms and hosts (SQL and Python, ~0.5 s at 100,000 documents), and
        # the publish's lazy imports, on a thread while the jobs run: this process only waits
        # for their tasks then, and the publish would otherwise do them on one core with the
        # other idle.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="url-facts") as helper:
            facts = helper.submit(url_facts, sessions, num_docs)
            helper.submit(import_forward_index_tools)
            links, index = run_index_jobs(
                settings,
                manifest,
                graph_parts,
                scratch,
                say,
                links_expected=expected,
                map_only=map_only,
                records=count,
            )
            kinds, doc_hosts = facts.result()
        records = index.counter("blocks", "records")
        if records != count and index.counters:  # no counters: an emulator keeps no job logs
            say(
                f"warning: {count} documents but {records} current records in their blocks "
                f"({index.counter('blocks', 'listed_records_missing')} listed but missing)"
            )

        graph, ranks = compute_pagerank(settings, doc_hosts, links.path, num_docs, scratch, say, progress)

        say("4/4 publish")
        stage = time.monotonic()
        # The terms' postings are read from the job's file a range at a time (segment_stream).
        terms: TermSource
        columns, terms = piece_columns(index.parts) if map_only else index_columns(index.path)
        read_s, stage = time.monotonic() - stage, time.monotonic()
        arrays = streamed_segment(
            terms,
            columns,
            ranks.ranks,
            num_docs,
            near_duplicates=settings.index.near_duplicates,
            links=graph,
            url_kinds=kinds,
            doc_hosts=doc_hosts,
            progress=say,
        )
        languages = columns.languages
        del graph, columns, terms
        arrays_s, stage = time.monotonic() - stage, time.monotonic()
        meta = segment_meta(
            arrays,
            pagerank_iterations=ranks.iterations,
            pagerank_damping=settings.index.pagerank_damping,
            created_at=time.time(),
            languages=languages,
        )
        meta.update(mark.to_meta())
        published = publish_segment(
            arrays, meta, store, sessions, keep=settings.index.keep_segments, packed=True
        )
        say(
            f"    read job output {read_s:.1f} s, arrays and impacts {arrays_s:.1f} s, "
            f"store and activate {time.monotonic() - stage:.1f} s"
        )
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        show_emr_progress(None)
        engine.dispose()

    result = BuildResult(
        version_id=published.version_id,
        segment=published.segment,
        num_docs=num_docs,
        num_terms=meta["num_terms"],
        num_postings=meta["num_postings"],
        pagerank_iterations=ranks.iterations,
        pagerank_delta=ranks.delta,
        seconds=time.monotonic() - started,
        near_duplicates=meta["near_duplicates"],
    )
    say(
        f"published {result.segment} (version {result.version_id}, {published.size} bytes): "
        f"{result.num_docs} docs ({result.near_duplicates} near-duplicates folded), "
        f"{result.num_terms} terms, {result.num_postings} postings, "
        f"pagerank {result.pagerank_iterations} iterations (L1 change "
        f"{result.pagerank_delta:.3g}) in {result.seconds:.1f} s"
    )
    return result
