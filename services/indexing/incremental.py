"""The merge: an index version's base and deltas folded into one segment, as a full build.

Between merges the documents committed since the active version are published as delta
segments beside its base (``services.indexing.delta_build``: cheap, but without the anchor
text, links and PageRank that need the whole graph). ``nimbus index update --merge`` (and the
indexer's daemon, when its merge policy says so) finds the documents whose commit is newer
than the *base's* mark (``commit_mark``: new pages and recrawled ones, and pages a recrawl or
the operator's purge removed: a purge takes a commit seq of its own), which are those the
deltas hold and any since, analyzes only those (MRIndex, the build's costly job), and merges
the result into the base segment (``segment_merge``) with the statistics of all live
documents recomputed. The deltas are not read: their documents are analyzed again. The
link graph job reads every record, as a full build's does: a crawl's new pages are found
through links on older ones, so their anchor text comes from pages the update does not
analyze; with the whole graph, anchor text, in-links and PageRank
are a full build's too, and the merge equals a full build over the same records (the spelling
vocabulary's counts aside: ``segment_merge``).

``deltas_only`` (the daemon's background merge) folds only what the version's deltas hold:
the documents committed through the mark of its newest delta when the merge starts, so the
deltas published while it runs hold only newer documents. The merged segment is published
as a new version with those deltas kept on top of it (``publish.publish_segment``), only if
the version is still the active one or that one plus deltas (a full build that finished
meanwhile wins).

Each merge reads every record's links and rewrites the whole segment: its cost grows with
the index (docs/benchmarks.md, "Incremental updates"); the merge policy
(``services.indexing.daemon``) bounds how often it runs.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from sqlalchemy import and_, func, not_, select

from services.config import Settings
from services.indexing.build import compute_pagerank, progress_lines, run_index_jobs
from services.indexing.commit_mark import commit_mark
from services.indexing.emr_options import show_emr_progress
from services.indexing.errors import NoBaseError
from services.indexing.graph_input import graph_input
from services.indexing.index_rows import collect_index_rows, read_index_rows
from services.indexing.manifest import manifest_parts, write_manifest_parts
from services.indexing.publish import VersionRef, publish_segment
from services.indexing.segment_arrays import segment_arrays, segment_meta
from services.indexing.segment_merge import SegmentPart, check_mergeable, merge_segments, merged_languages
from services.indexing.url_facts import url_facts
from services.indexing.url_names import write_name_lines
from services.storage.blobs.blobstore import BlobStore, open_blobstore
from services.storage.formats.segment import open_segment, read_meta, release_pages
from services.storage.sql.commit_marks import CommitMark, removed_since
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db


@dataclass
class UpdateResult:
    base_version: int
    version_id: int | None  # None: nothing was committed since the base
    segment: str
    num_docs: int
    new_documents: int  # documents this update indexed (new pages, recrawls) or left out (gone)
    through_seq: int
    seconds: float


def update_index(
    settings: Settings,
    *,
    progress: bool = True,
    report: Callable[[str], None] | None = None,
    deltas_only: bool = False,
) -> UpdateResult:
    """Index what was committed since the active version's base and publish the merge (module
    docstring); ``deltas_only``: only what its deltas hold. Raises ``NoBaseError`` when there is
    no version to update or it was built before updates existed, ``PublishError`` when it was
    built with another analyzer (a full build is then the way), ``SupersededError`` when
    another version replaced it meanwhile."""
    started = time.monotonic()
    say = progress_lines("update", progress, report)
    engine = make_engine(settings.database_url)
    scratch: Path | None = None
    try:
        init_db(engine)
        sessions = session_factory(engine)
        store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        with sessions() as session:
            version = active_index(session)
            if version is None:
                raise NoBaseError("no index is published yet: build one first with `nimbus index`")
            ref = VersionRef.of(version)
            base_id, base_name = version.id, version.segment
        base_meta = read_meta(lambda start, end: store.get(base_name, start, end), base_name)
        base_mark = CommitMark.from_meta(base_meta)
        if base_mark is None:
            raise NoBaseError(
                f"the active index {base_name} was built before incremental updates: run a full "
                "build once (`nimbus index`), then updates follow it",
                stale=True,
            )
        through = _newest_mark(store, ref) if deltas_only else None
        # The documents to analyze: committed after the base, and not after ``through``.
        since = base_mark.newer() if through is None else and_(base_mark.newer(), not_(through.newer()))
        with sessions() as session:
            later = commit_mark(session)  # before the documents, as a full build reads it
            waiting = session.scalar(select(func.count()).select_from(Document).where(since))
            removed = np.array(removed_since(session, base_mark), dtype=np.int64)
        mark = base_mark.joined(later) if through is None else through
        if not waiting:
            say(f"nothing committed since version {base_id}'s base (through seq {mark.through_seq})")
            return UpdateResult(
                base_id, None, base_name, int(base_meta["num_docs"]), 0, mark.through_seq, 0.0
            )

        scratch = (
            settings.var_dir / "mr" / f"update-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        ).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
        text_dir, graph_dir = scratch / "text", scratch / "graph"
        text_dir.mkdir()
        graph_dir.mkdir()
        with sessions() as session:
            count, max_doc = session.execute(select(func.count(), func.max(Document.doc_num))).one()
            text = write_manifest_parts(session, text_dir, manifest_parts(settings), where=since)
            graph_all = write_manifest_parts(session, graph_dir, manifest_parts(settings))
        manifest, blocks, delta_docs, every = text.paths, text.blocks, text.docs, graph_all.paths
        # Documents committed while the manifests were written are in them: count them.
        num_docs = max(int(max_doc) + 1, int(base_meta["num_docs"]), text.docs_end, graph_all.docs_end)
        with sessions() as session:
            names = write_name_lines(session, scratch / "names.txt.gz", below=num_docs)
        say(
            f"{delta_docs.shape[0]} documents committed since version {base_id}'s base (seq > "
            f"{base_mark.through_seq}"
            + ("" if through is None else f", through the mark of its {len(ref.deltas)} deltas")
            + f") in {blocks} record blocks, {removed.shape[0]} gone, noindex or "
            f"purged; the link graph reads all {count}"
        )
        if settings.index.mr_runner == "emr" and (progress or report is not None):
            show_emr_progress(say)
        graph_parts = graph_input(every, scratch / "names.txt.gz", names.lines, graph_dir)
        links, index = run_index_jobs(settings, manifest, graph_parts, scratch, say)
        kinds, doc_hosts = url_facts(sessions, num_docs)
        graph, ranks = compute_pagerank(settings, doc_hosts, links.path, num_docs, scratch, say, progress)

        say("4/4 merge with the active segment and publish")
        stage = time.monotonic()
        columns = collect_index_rows(read_index_rows(index.path))
        delta = segment_arrays(
            columns,
            ranks.ranks,
            num_docs,
            near_duplicates=False,
            links=graph,
            url_kinds=kinds,
            doc_hosts=doc_hosts,
        )
        delta_meta = segment_meta(delta, pagerank_iterations=0, pagerank_damping=0.0, created_at=time.time())
        check_mergeable([base_meta, delta_meta])
        # On a file:// store the blob itself is mapped, not a copy of it; the merge reads it a
        # term range at a time (``merge_ranges``), never expanded whole.
        base_arrays, base_meta = open_segment(store.local_file(base_name, scratch / "base.nseg"))
        merged = merge_segments(
            [
                SegmentPart(base_arrays, np.arange(int(base_meta["num_docs"]))),
                SegmentPart(delta, delta_docs, whole_graph=True),
            ],
            num_docs,
            ranks.ranks,
            near_duplicates=settings.index.near_duplicates,
            removed=removed,
            url_kinds=kinds,
            doc_hosts=doc_hosts,
            release=partial(release_pages, base_arrays),
        )
        del base_arrays, delta, graph
        meta = segment_meta(
            merged,
            pagerank_iterations=ranks.iterations,
            pagerank_damping=settings.index.pagerank_damping,
            created_at=time.time(),
            languages=merged_languages([base_meta, {"languages": columns.languages}]),
        )
        meta.update(mark.to_meta())
        meta["incremental"] = {
            "base": base_name,
            "documents": int(delta_docs.shape[0]),
            "removed": int(removed.shape[0]),
            "deltas": len(ref.deltas),
        }
        say(f"    merged {num_docs} documents in {time.monotonic() - stage:.1f} s")

        published = publish_segment(
            merged, meta, store, sessions, keep=settings.index.keep_segments, replaces=ref, packed=True
        )
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        show_emr_progress(None)
        engine.dispose()
    result = UpdateResult(
        base_version=base_id,
        version_id=published.version_id,
        segment=published.segment,
        num_docs=num_docs,
        new_documents=int(delta_docs.shape[0] + removed.shape[0]),
        through_seq=mark.through_seq,
        seconds=time.monotonic() - started,
    )
    say(
        f"published {result.segment} (version {result.version_id}, {published.size} bytes, "
        f"{len(published.deltas)} deltas kept on top): {result.new_documents} documents added or "
        f"replaced, {result.num_docs} in all, through commit seq {result.through_seq}, in "
        f"{result.seconds:.1f} s"
    )
    return result


def _newest_mark(store: BlobStore, ref: VersionRef) -> CommitMark:
    """The commit mark of the version's newest segment: what its deltas hold, through."""
    meta = read_meta(lambda start, end: store.get(ref.newest, start, end), ref.newest)
    mark = CommitMark.from_meta(meta)
    if mark is None:
        raise NoBaseError(f"index segment {ref.newest} has no commit mark: run a full build", stale=True)
    return mark
