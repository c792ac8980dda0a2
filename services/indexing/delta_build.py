"""A delta segment: the documents committed since the active version, published beside it.

``nimbus index update`` (and the indexer's daemon every ``NIMBUS_UPDATE_EVERY`` seconds)
finds the documents whose commit is newer than the mark of the active version's newest
segment (its last delta's, or its base's), analyzes only those (MRIndex), and publishes
them as a *delta segment* (``services.storage.formats.delta``): the version becomes its
base and deltas plus this one, searched side by side, the delta's copy of a document
superseding an earlier segment's. Nothing of the base is rewritten: a delta costs what is
new (and a few reads of the base: below), not what the index holds.

What a delta knows, and what waits for the next merge (``services.indexing.incremental``,
started by the daemon's merge policy) or full build:

- *Scoring*: the impacts use the collection's statistics, not the delta's own
  (``services.indexing.delta_stats``: N, each term's df over the version, average field
  lengths over every document), so a delta's document scores as it would in a merge, but
  for what follows.
- *Anchor text and links*: the link job reads only the new records, so anchor text and
  links from older pages into new ones (and from new pages into older ones) are missing,
  as are links through aliases and duplicate URLs. This is the defined loss of a delta.
- *PageRank*: none is run. A new document gets the collection's mean, 1/N (an average
  page's prior); a recrawled one keeps the base's value. The PageRank rows are not rewritten.
- *Near-duplicates* are not folded (folding happens at the merge); the spelling vocabulary
  and site names are the delta's own documents'.

Removals (gone, noindex, purged) since the newest mark are listed in the delta's meta, so
the search service hides them in every earlier segment.

A delta is published only while the active version's newest segment is the one it was built
after (``publish.publish_delta_segment``); the blob is stored before the version row, so a
kill at any point leaves search on the previous version and loses nothing: the next delta
takes the same commits again.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mapreduce.mr_linkgraph import adjacency_rows
from services.config import Settings
from services.indexing.build import progress_lines, run_index_jobs
from services.indexing.commit_mark import commit_mark
from services.indexing.delta_stats import VersionPart, delta_stats
from services.indexing.emr_options import show_emr_progress
from services.indexing.errors import BuildError, NoBaseError
from services.indexing.incremental import UpdateResult
from services.indexing.index_rows import IndexColumns, collect_index_rows, read_index_rows
from services.indexing.manifest import manifest_parts, write_manifest_parts
from services.indexing.publish import PublishedIndex, VersionRef, publish_delta_segment
from services.indexing.segment_arrays import segment_arrays, segment_meta
from services.indexing.segment_merge import check_mergeable
from services.indexing.url_facts import held_url_facts
from services.storage.blobs.blobstore import BlobStore, open_blobstore
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.segment import open_segment, read_meta
from services.storage.formats.segment_codec import held_rows
from services.storage.sql.commit_marks import CommitMark, removed_since
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import active_index
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db

# A version with this many deltas gets no more until a merge or a full build folds them: every
# query reads each delta, and the search side numbers a version's segments in a byte. Far above
# the merge policy's NIMBUS_MERGE_DELTAS (8): only merges that keep failing reach it.
MAX_DELTAS = 64


def publish_delta(
    settings: Settings, *, progress: bool = True, report: Callable[[str], None] | None = None
) -> UpdateResult:
    """Index what was committed since the active version's newest segment and publish it as a
    delta of that version (module docstring). ``version_id`` None: nothing was committed.
    Raises ``NoBaseError`` when there is no version or it was built before commit marks,
    ``PublishError`` when its analyzer or format differs (a full build is then the way),
    ``SupersededError`` when another version became active meanwhile."""
    started = time.monotonic()
    say = progress_lines("delta", progress, report)
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        sessions = session_factory(engine)
        store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        with sessions() as session:
            version = active_index(session)
            if version is None:
                raise NoBaseError("no index is published yet: build one first with `nimbus index`")
            ref = VersionRef.of(version)
        if len(ref.deltas) >= MAX_DELTAS:
            raise BuildError(
                f"index version {ref.id} has {len(ref.deltas)} delta segments, the most a version "
                "takes: merge them first (`nimbus index update --merge`; the indexer's merges are "
                "failing: see its log), or build (`nimbus index`)"
            )
        metas = [segment_meta_of(store, name) for name in ref.segments]
        if CommitMark.from_meta(metas[0]) is None:
            raise NoBaseError(
                f"the active index {ref.segment} was built before incremental updates: run a full "
                "build once (`nimbus index`), then updates follow it",
                stale=True,
            )
        newest = CommitMark.from_meta(metas[-1])
        if newest is None:  # a delta always carries its mark: its meta is not a delta's
            raise NoBaseError(f"index segment {ref.newest} has no commit mark: run a full build", stale=True)
        with sessions() as session:
            later = commit_mark(session)  # before the documents, as a full build reads it
            waiting = session.scalar(select(func.count()).select_from(Document).where(newest.newer()))
            removed = np.array(removed_since(session, newest), dtype=np.int64)
        mark = newest.joined(later)
        if not waiting:
            say(f"nothing committed since version {ref.id} (through seq {newest.through_seq})")
            return UpdateResult(ref.id, None, ref.newest, ref.num_docs, 0, mark.through_seq, 0.0)
        published, holds, num_docs = _build_and_publish(
            settings, sessions, store, ref, metas, newest, mark, removed, say
        )
    finally:
        show_emr_progress(None)
        engine.dispose()
    result = UpdateResult(
        base_version=ref.id,
        version_id=published.version_id,
        segment=published.segment,
        num_docs=num_docs,
        new_documents=int(holds.shape[0] + removed.shape[0]),
        through_seq=mark.through_seq,
        seconds=time.monotonic() - started,
    )
    say(
        f"published delta {result.segment} (version {result.version_id}: {ref.segment} and "
        f"{len(published.deltas)} deltas, {published.size} bytes): {holds.shape[0]} documents added "
        f"or replaced, {removed.shape[0]} removed, {num_docs} in all, through commit seq "
        f"{result.through_seq}, in {result.seconds:.1f} s"
    )
    return result


def _build_and_publish(
    settings: Settings,
    sessions: sessionmaker[Session],
    store: BlobStore,
    ref: VersionRef,
    metas: list[dict[str, Any]],
    newest: CommitMark,
    mark: CommitMark,
    removed: np.ndarray,
    say: Callable[[str], None],
) -> tuple[PublishedIndex, np.ndarray, int]:
    """The delta's jobs, arrays and publish; (published, documents held, N)."""
    scratch = (
        settings.var_dir / "mr" / f"delta-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    ).resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    with sessions() as session:
        max_doc = session.scalar(select(func.max(Document.doc_num)))
        text = write_manifest_parts(session, scratch, manifest_parts(settings), where=newest.newer())
    holds = text.docs
    num_docs = max(int(max_doc or 0) + 1, ref.num_docs, text.docs_end)
    say(
        f"{holds.shape[0]} documents committed since version {ref.id} (seq > {newest.through_seq}) "
        f"in {text.blocks} record blocks, {removed.shape[0]} gone, noindex or purged"
    )
    graph: dict[int, list[int]] = {}
    columns = IndexColumns()
    if holds.shape[0]:
        if settings.index.mr_runner == "emr":
            show_emr_progress(say)
        # The link job over the new records only: anchor text between them (module docstring).
        links, index = run_index_jobs(settings, text.paths, text.paths, scratch, say)
        graph = dict(adjacency_rows(links.path))
        columns = collect_index_rows(read_index_rows(index.path))

    say("3/3 delta segment: collection statistics, impacts, publish")
    stage = time.monotonic()
    parts = _version_parts(store, ref, metas, settings.var_dir / "segment-cache")
    terms = sorted(columns.chunks)
    stats, new_terms = delta_stats(parts, num_docs, holds, removed, columns.lengths, terms)
    stats_s = time.monotonic() - stage
    base_ranks = np.array(parts[0].arrays["pagerank"][:num_docs], dtype=np.float64)
    del parts
    prior = np.full(num_docs, 1.0 / num_docs)  # a new page: the collection's mean
    prior[: base_ranks.shape[0]] = base_ranks  # a recrawl keeps its own
    with sessions() as session:
        kinds, doc_hosts = held_url_facts(session, holds, num_docs)
    arrays = segment_arrays(
        columns,
        prior,
        num_docs,
        near_duplicates=False,
        links=graph,
        url_kinds=kinds,
        doc_hosts=doc_hosts,
        stats=stats,
    )
    meta = segment_meta(
        arrays,
        pagerank_iterations=0,
        pagerank_damping=0.0,
        created_at=time.time(),
        languages=columns.languages,
    )
    meta.update(mark.to_meta())
    # One per-document row per held document: the delta's bytes follow what it holds.
    arrays = held_rows(arrays, holds)
    meta.update(DeltaDocs(ref.segment, holds.astype(np.uint32), removed.astype(np.uint32), True).to_meta())
    meta["collection"] = {"num_docs": num_docs, "average_lengths": list(stats.average_lengths)}
    check_mergeable([*metas, meta])
    published = publish_delta_segment(
        arrays,
        meta,
        store,
        sessions,
        keep=settings.index.keep_segments,
        extends=ref,
        num_terms=ref.num_terms + new_terms,
    )
    rest_s = time.monotonic() - stage - stats_s
    say(f"    collection statistics {stats_s:.2f} s, arrays and publish {rest_s:.2f} s")
    shutil.rmtree(scratch, ignore_errors=True)
    return published, holds, num_docs


def _version_parts(
    store: BlobStore, ref: VersionRef, metas: list[dict[str, Any]], cache: Path
) -> list[VersionPart]:
    """The version's segments memory-mapped, base first: on a file:// store the blobs
    themselves; from another (S3), copies kept in ``cache`` from one delta to the next
    (segments never change: the base is fetched once, not for every delta), the copies of
    segments no longer in the version removed."""
    parts = []
    for name, meta in zip(ref.segments, metas, strict=True):
        path = cache / name.replace("/", "__")
        if not store.remote:
            path = store.local_file(name, path)
        elif not (path.is_file() and path.stat().st_size == store.size(name)):
            store.download(name, path)  # atomic: a reader never maps half a file
        arrays, _ = open_segment(path)
        parts.append(VersionPart(name, arrays, DeltaDocs.from_meta(meta)))
    if cache.is_dir():
        wanted = {name.replace("/", "__") for name in ref.segments}
        for old in cache.glob("*.nseg"):
            if old.name not in wanted:
                old.unlink(missing_ok=True)  # mapped elsewhere: POSIX keeps it until unmapped
    return parts


def segment_meta_of(store: BlobStore, name: str) -> dict[str, Any]:
    """A stored segment's meta, from two ranged reads (not its arrays)."""
    return read_meta(lambda start, end: store.get(name, start, end), name)
