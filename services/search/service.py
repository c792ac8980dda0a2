"""The search use case: query in, ranked hits with titles and snippets out.

It wires the pure parts (analyzer, ``rank``, ``snippets``) to the stores: the
index segment through ``IndexHolder``, titles and URLs from the documents
table and other URLs with the same content from the duplicates table (one
``IN`` query each per page), snippet text from the record block and cached
copies from the content block (one ranged read each).

A recrawl may change a document after the index was built: the row then
points to the new record and content, so titles, snippets and cached copies
show the latest version, while ranking follows the index until the next
``nimbus index``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from services.config import Settings
from services.errors import NimbusError
from services.malloc import keep_freed_memory
from services.search.hits import HitReader
from services.search.page_views import PageViews
from services.search.query.empty_query import EXCLUSIONS_ONLY_MESSAGE, nothing_to_search_message
from services.search.query.examples import OperatorExamples, operator_examples
from services.search.query.language import ParsedQuery, analyses_for, parse_query, plain_query
from services.search.query.limits import MAX_QUERY_CHARS, QUERY_PART, bound_query
from services.search.query.suggest import (
    COMPLETIONS,
    Vocabulary,
    clearly_better,
    corrected_query,
    replaces,
)
from services.search.result_cache import ResultCache
from services.search.results import MAX_RESULTS, SearchResults
from services.search.retrieval.filters import DocFacts, needs_facts, operator_mask
from services.search.retrieval.index_holder import IndexHolder
from services.search.retrieval.per_version import PerVersion
from services.search.retrieval.retrieve import Retrieval, retrieve_ranked
from services.search.retrieval.segment import SegmentIndex
from services.search.version_tables import VersionTables
from services.storage.blobs.blobstore import BlobStore, open_blobstore
from services.storage.blobs.block_cache import BlockCache
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.schema import init_db

log = logging.getLogger(__name__)

MAX_SUGGEST_CHARS = 200  # completions are for what a person is typing
MAX_PAGE_SIZE = 100  # results per page a client may ask for (``size``)
RANKINGS_KEPT = 256  # queries whose whole ranking is kept for paging (~20 KB each)
MAX_FEWER_PARTS = 8  # "fewer words" is offered for queries of at most this many parts
NO_INDEX_MESSAGE = (
    "No index has been published yet. Run `nimbus crawl` and then `nimbus index`; "
    "this page picks the index up without a restart."
)


class SearchService:
    """Built from settings; one per process, shared by all requests (thread-safe)."""

    def __init__(
        self, settings: Settings, recheck_seconds: float = 2.0, blobs: BlobStore | None = None
    ) -> None:
        # Queries allocate and free per-document tables and candidate arrays: kept in the
        # process, they are not faulted in again each query (services.malloc).
        keep_freed_memory()
        self.settings = settings
        self.retrieval = settings.search  # the query-time ranking knobs retrieval reads
        self.engine = make_engine(settings.database_url)
        init_db(self.engine)  # a fresh install serves the "no index yet" page, not an SQL error
        self.sessions = session_factory(self.engine)
        self.blobs = blobs or open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        # From S3, record blocks are kept whole on this machine's disk as they are first read.
        self.blocks: BlockCache | None = None
        if self.blobs.remote and settings.search.record_cache_bytes:
            cache_dir = Path(settings.var_dir) / "blocks"
            self.blocks = BlockCache(self.blobs, cache_dir, settings.search.record_cache_bytes)
        self.holder = IndexHolder(
            self.sessions, self.blobs, Path(settings.var_dir) / "segments", recheck_seconds=recheck_seconds
        )
        # Snippet records (and page info's anchor texts) are fetched in parallel: on S3
        # each is a ranged GET whose latency, not its few kilobytes, is the cost.
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="records")
        self.hit_reader = HitReader(self.engine, self.blobs, self.blocks, self.pool)
        self.results: ResultCache[SearchResults] = ResultCache(
            settings.search.result_cache_size, settings.search.result_cache_seconds
        )
        # Rankings to MAX_RESULTS (a few tens of kilobytes each) for the pages still to come.
        self.rankings: ResultCache[Retrieval] = ResultCache(
            min(RANKINGS_KEPT, settings.search.result_cache_size), settings.search.result_cache_seconds
        )
        # A version that only adds deltas keeps the spelling vocabulary and the operator
        # examples of the version they were built for (a delta's new words are offered once a
        # merge makes them part of a base) and reads only the delta's documents' hosts.
        tables = VersionTables(self.sessions)
        self.vocabularies: PerVersion[Vocabulary] = PerVersion(tables.vocabulary, _kept)
        self.facts: PerVersion[DocFacts] = PerVersion(tables.facts, tables.add_facts)
        self._examples: PerVersion[OperatorExamples] = PerVersion(self._build_examples, _kept)
        self.pages = PageViews(self)  # page info, cached copies, extracted text
        # Every store on this machine: no request waits on the network (answers_at_once).
        self._local_io = not self.blobs.remote and self.engine.dialect.name == "sqlite"

    def close(self) -> None:
        self.holder.close()
        self.pool.shutdown(wait=True)
        if self.blocks is not None:
            self.blocks.close()
        self.engine.dispose()

    def index(self) -> SegmentIndex | None:
        return self.holder.current()

    def answers_at_once(self) -> bool:
        """Whether a search or a completion now would wait on nothing but the CPU: every
        store on this machine (a memory-mapped segment, files in the page cache, SQLite), the
        index version checked recently and its tables built. The web app then answers on its
        event loop: the hand-off to a worker thread and back costs more than the search
        (docs/benchmarks.md). Otherwise, a request that may wait on S3, MySQL or a version
        being loaded goes to the thread pool and the others go on meanwhile."""
        if not self._local_io or not self.holder.fresh():
            return False
        index = self.holder.current()
        return index is not None and self.vocabularies.ready_for(index) and self.facts.ready_for(index)

    def search(
        self, q: str, page: int = 1, size: int | None = None, *, as_typed: bool = False
    ) -> SearchResults:
        """One page of results; ``size`` results per page (the setting's when None), at most
        MAX_PAGE_SIZE. A misspelled query's correction is searched instead when it clearly
        answers better (``replaces``), unless ``as_typed`` (the API's and page's ``nfpr=1``).

        ``q`` is searched within the query limits (``bound_query``: characters, words typed
        again and again, words); the answer's ``cut`` says what was left out."""
        started = time.perf_counter()
        bounded = bound_query(q)
        q = bounded.text
        per_page = min(
            MAX_PAGE_SIZE, max(1, size if size is not None else self.settings.search.results_per_page)
        )
        page = max(1, page)

        def done(**kwargs: Any) -> SearchResults:
            took = (time.perf_counter() - started) * 1000.0
            return SearchResults(
                query=q,
                page=page,
                per_page=per_page,
                took_ms=took,
                as_typed=as_typed,
                cut=bounded.cut,
                **kwargs,
            )

        index = self.holder.current()
        if index is None:
            return done(total=0, message=NO_INDEX_MESSAGE)
        if not q:
            return done(total=0, index_version=index.version_id)
        key = (index.view, q, page, per_page, as_typed)
        cached = self.results.get(key)
        if cached is not None:
            # Kept by the query as searched: the cut is the one of the query as sent.
            took = (time.perf_counter() - started) * 1000.0
            return replace(cached, took_ms=took, cached=True, cut=bounded.cut)
        answer = self._search(q, page, per_page, index, done, as_typed)
        self.results.put(key, answer)
        return answer

    def _search(
        self,
        q: str,
        page: int,
        per_page: int,
        index: SegmentIndex,
        done: Callable[..., SearchResults],
        as_typed: bool = True,
    ) -> SearchResults:
        query = parse_query(q, analyses_for(q, index.languages))
        if query.only_exclusions:
            return done(total=0, message=EXCLUSIONS_ONLY_MESSAGE, index_version=index.version_id)
        if query.empty and not query.filtered:
            message = nothing_to_search_message(q, analyses_for(q, index.languages)[0])
            return done(total=0, message=message, index_version=index.version_id)
        first = (page - 1) * per_page
        result = self._ranking(q, query, index, first + per_page)
        ranked = result.ranked
        total = max(ranked.total, int(ranked.docs.shape[0]))
        exact = ranked.exact
        if first >= MAX_RESULTS:
            return done(
                total=total,
                total_exact=exact,
                terms=result.found,
                index_version=index.version_id,
                mode=result.mode,
            )
        last = min(first + per_page, int(ranked.docs.shape[0]))
        every_form = {form for term in query.terms for form in query.forms_of(term)}
        hits = self.hit_reader.hits(ranked, range(first, last), every_form, index)
        suggestion, found_by_suggestion = "", 0
        full = _full_matches(result, query, total)
        if len(result.found) < len(query.terms) or total < per_page:
            # Every form of the words found: the speller reads a word in English (its stem may be
            # the word's English alternative, not the term of the query's first language).
            found_forms = {form for term in result.found for form in query.forms_of(term)}
            suggestion, found_by_suggestion = self._did_you_mean(q, index, found_forms, full)
        if suggestion and not as_typed and replaces(full, found_by_suggestion):
            # "Showing results for": the correction's results, the query as typed one click away.
            corrected = self._search(suggestion, page, per_page, index, done)
            return replace(corrected, query=suggestion, corrected_from=q, suggestion="")
        return done(
            fewer=self._fewer(q, index) if total == 0 else [],
            total=total,
            total_exact=exact,
            hits=hits,
            terms=result.found,
            index_version=index.version_id,
            mode=result.mode,
            some_words_only=result.some_words_only(query),
            few_all_words=result.all_words or 0,  # set only when the AND gave way to OR
            phrase_relaxed=result.phrase_relaxed(),
            suggestion=suggestion,
        )

    def _ranking(self, q: str, query: ParsedQuery, index: SegmentIndex, need: int) -> Retrieval:
        """The query's first MAX_RESULTS results, the one list every page is cut from, read
        at least ``need`` deep.

        Ranked to the same depth whatever page is asked for: how far the list is read
        never changes what it holds (whether AND matches are many enough, the words-as-typed
        rescore's window, the count), so page n+1 continues page n and every page states
        the same total. Only the partial matches after an AND's are ranked no deeper than
        the page (``retrieve``'s ``upto``), and again, deeper, for a later page. Kept per query
        and index version, so paging ranks once per such step."""
        key = (index.view, q)
        result = self.rankings.get(key)
        if result is None or not result.complete and result.ranked.docs.shape[0] < need:
            allowed = self.allowed(query, index)
            result = retrieve_ranked(index, query, MAX_RESULTS, self.retrieval, allowed, upto=need)
            self.rankings.put(key, result)
        return result

    def _fewer(self, q: str, index: SegmentIndex, limit: int = 3) -> list[str]:
        """For a query that found nothing: the query without one of its parts (a word, a
        quoted phrase, an operator), for each that finds something; at most ``limit``."""
        parts = [m.group(0) for m in QUERY_PART.finditer(q)]
        out: list[str] = []
        # One retrieval per part tried: a pasted paragraph that found nothing is not cut up.
        for i in range(len(parts)) if 1 < len(parts) <= MAX_FEWER_PARTS else ():
            shorter = " ".join(parts[:i] + parts[i + 1 :])
            query = parse_query(shorter, analyses_for(shorter, index.languages))
            if query.empty and not query.filtered:
                continue
            allowed = self.allowed(query, index)
            if retrieve_ranked(index, query, 1, self.retrieval, allowed).ranked.docs.shape[0]:
                out.append(shorter)
                if len(out) == limit:
                    break
        return out

    def _did_you_mean(self, q: str, index: SegmentIndex, known: set[str], total: int) -> tuple[str, int]:
        """A corrected query, when one finds clearly more documents (``suggest``), and the
        documents it answers in full; ("", 0) when there is none."""
        corrected = corrected_query(q, self.vocabulary(index), known)
        if corrected is None:
            return "", 0
        query = parse_query(corrected, analyses_for(corrected, index.languages))
        allowed = self.allowed(query, index)
        result = retrieve_ranked(index, query, 1, self.retrieval, allowed)
        better = _full_matches(result, query, max(result.ranked.total, int(result.ranked.docs.shape[0])))
        return (corrected, better) if clearly_better(total, better) else ("", 0)

    def suggest(self, q: str, limit: int = COMPLETIONS) -> list[str]:
        """Completions of the query's last word, the rest of the query kept as typed; none
        for a query longer than MAX_SUGGEST_CHARS (a paragraph is not being typed, and its
        cut end is no word to complete)."""
        index = self.holder.current()
        if len(q) > MAX_QUERY_CHARS:  # before reading it: a huge query costs nothing
            return []
        text = " ".join(q.split())
        if index is None or not text or q[-1:].isspace() or len(text) > MAX_SUGGEST_CHARS:
            return []
        head, _, last = text.rpartition(" ")
        vocabulary = self.vocabulary(index)
        ends = vocabulary.complete_phrase(last if not head else f"{head.rpartition(' ')[2]} {last}", limit)
        before = head.rpartition(" ")[0] if head else ""
        phrases = [f"{before} {p}".strip() if head else p for p in ends]
        words = [f"{head} {w}" if head else w for w in vocabulary.complete(last, limit)]
        return list(dict.fromkeys(phrases + words))[:limit]

    def vocabulary(self, index: SegmentIndex) -> Vocabulary:
        """The index version's vocabulary (``suggest``), built once per version."""
        return self.vocabularies.get(index)

    def warm(self) -> None:
        """Build what the first suggestion, correction or site: query would otherwise wait
        for; a failure is logged and left to the first request to meet."""
        try:
            index = self.holder.current()
            if index is not None:
                self.vocabularies.get(index)
                self.facts.get(index)
                self._examples.get(index)
        except (NimbusError, SQLAlchemyError) as exc:  # the service still starts: /healthz says why
            log.warning("could not prepare suggestions for the index being served: %s", exc)

    def examples(self) -> OperatorExamples:
        """Operator examples that find something in the index being served (``examples``)."""
        index = self.holder.current()
        return OperatorExamples() if index is None else self._examples.get(index)

    def _build_examples(self, index: SegmentIndex) -> OperatorExamples:
        facts = self.facts.get(index)
        vocabulary = self.vocabulary(index)
        known = facts.host_of[facts.host_of >= 0]
        per_host = np.bincount(known, minlength=len(facts.hosts)) if known.shape[0] else np.zeros(0, np.int64)
        hosts = [(facts.hosts[i], int(per_host[i])) for i in np.argsort(-per_host, kind="stable")[:3]]
        phrases = [p for p, _ in vocabulary.phrases.most_common(5)]

        def works(q: str) -> bool:
            query = parse_query(q, analyses_for(q, index.languages))
            if query.empty and not query.filtered:
                return False
            found = retrieve_ranked(index, query, 1, self.retrieval, self.allowed(query, index))
            return bool(found.ranked.docs.shape[0])

        return operator_examples(hosts, vocabulary.title_words, phrases, vocabulary.titles, works)

    def allowed(self, query: ParsedQuery, index: SegmentIndex) -> np.ndarray | None:
        """The operators' document mask for ``query`` (None: no operator)."""
        return operator_mask(query, index, self.facts.get(index) if needs_facts(query) else None)

    def ranked(self, q: str, k: int, *, operators: bool = True) -> list[tuple[int, float]]:
        """The ``k`` best (doc_num, score) for ``q``, in result order: the ranking ``search``
        pages through, without titles or snippets (``nimbus eval`` and benchmarks use it).
        ``operators=False`` reads ``q`` as words only (``plain_query``: judged collections'
        queries are prose).

        In "AND first" results a partial match may score above a full match
        listed before it: the order, not the score, is the ranking.
        """
        index = self.holder.current()
        if index is None:
            return []
        analyses = analyses_for(q, index.languages)
        query = parse_query(bound_query(q).text, analyses) if operators else plain_query(q, analyses)
        if query.empty or k <= 0:
            return []
        ranked = retrieve_ranked(index, query, k, self.retrieval, self.allowed(query, index)).ranked
        return list(zip(ranked.docs.tolist(), ranked.final.tolist(), strict=True))


def _full_matches(result: Retrieval, query: ParsedQuery, total: int) -> int:
    """Documents that answer the whole query: none when a word is not in the index or no
    document holds every word (the results are then partial matches)."""
    if len(result.found) < len(query.terms) or result.some_words_only(query) or result.mode == "none":
        return 0
    return total


T = TypeVar("T")


def _kept(table: T, index: SegmentIndex, first: int) -> T:
    """A table kept as it is for a version that only adds deltas (``PerVersion``)."""
    return table
