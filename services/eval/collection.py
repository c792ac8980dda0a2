"""Judged test collections in the JSONL layout of data/ir/cranfield, or BEIR's.

``docs.jsonl`` ({"id", "title", "text"}), ``queries.jsonl`` ({"id", "text"}) and
``qrels.tsv`` (header ``query_id doc_id relevance``, TREC qrels lines, or headerless
``query_id doc_id relevance`` lines); BEIR's ``corpus.jsonl`` and ``qrels/test.tsv`` (or
``dev.tsv``) stand for the first and last, its ``_id`` for ``id``. Loading checks what a
wrong file would silently spoil (judgments of another corpus, duplicate ids, missing
fields) and says which file and byte offset (the JSON lines) or line (the judgments) is
at fault; the few judgments real collections make of documents or topics they lack are let
through and reported (``warnings``).

The JSON lines are read by the archives' reader (``services.archives.formats.jsonl``), the
one an archive crawl of a ``jsonl`` bundle uses: the same ids, titles, texts and URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from services.archives.batch import TO_END
from services.archives.formats import jsonl
from services.archives.records import ArchiveRecord
from services.eval.errors import CollectionError
from services.storage.documents import SourceDoc

LINE_CAP = 2**31  # a judged collection's document is never cut: no line is too long

__all__ = ["Collection", "CollectionError", "EvalQuery", "load_collection"]


@dataclass(frozen=True)
class EvalQuery:
    id: str
    text: str


@dataclass
class Collection:
    root: Path
    queries: list[EvalQuery]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance
    doc_ids: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)  # what loading let pass, to be said

    @property
    def name(self) -> str:
        """The collection's folder name (it names its documents' host)."""
        return self.root.resolve().name

    @property
    def docs_file(self) -> Path:
        """``docs.jsonl``, or BEIR's ``corpus.jsonl``."""
        return _docs_file(self.root)

    def docs(self) -> Iterator[SourceDoc]:
        """Stream the documents (a collection may not fit in memory)."""
        for _url, doc in _read_docs(self.docs_file, self.name):
            yield doc

    def doc_urls(self) -> Iterator[tuple[str, str]]:
        """(URL, id) of each document: the URL an archive crawl of the collection's bundle
        (a folder of the collection's name) stores it under."""
        for url, doc in _read_docs(self.docs_file, self.name):
            yield url, doc.id

    @property
    def judged_queries(self) -> list[EvalQuery]:
        return [q for q in self.queries if q.id in self.qrels]


def load_collection(root: Path) -> Collection:
    """The collection in ``root``: ours (``docs.jsonl``, ``queries.jsonl``, ``qrels.tsv``) or
    BEIR's (``corpus.jsonl`` with ``_id``, ``queries.jsonl``, ``qrels/test.tsv``), the
    layout SciFact, NFCorpus, TREC-COVID and the other BEIR sets are distributed in."""
    root = Path(root)
    docs_file, qrels_file = _docs_file(root), _qrels_file(root)
    for path in (docs_file, root / "queries.jsonl", qrels_file):
        if not path.is_file():
            raise CollectionError(
                f"{path} not found: a collection needs docs.jsonl, queries.jsonl and qrels.tsv "
                "(or BEIR's corpus.jsonl, queries.jsonl and qrels/test.tsv)"
            )
    doc_ids: set[str] = set()
    for _url, doc in _read_docs(docs_file, root.resolve().name):
        if doc.id in doc_ids:
            raise CollectionError(f"{docs_file}: duplicate document id {doc.id!r}")
        doc_ids.add(doc.id)
    queries = _queries(root / "queries.jsonl")
    warnings: list[str] = []
    qrels = _read_qrels(qrels_file, doc_ids, {q.id for q in queries}, warnings)
    return Collection(root, queries, qrels, doc_ids, warnings)


def _docs_file(root: Path) -> Path:
    return _ours_else_beirs(root / "docs.jsonl", root / "corpus.jsonl")


def _qrels_file(root: Path) -> Path:
    """qrels.tsv; else BEIR's test split, or its dev split where a set has no test split
    (MS MARCO's)."""
    beirs = root / "qrels" / "test.tsv"
    if not beirs.is_file() and (root / "qrels" / "dev.tsv").is_file():
        beirs = root / "qrels" / "dev.tsv"
    return _ours_else_beirs(root / "qrels.tsv", beirs)


def _ours_else_beirs(ours: Path, beirs: Path) -> Path:
    """Our file when it is there, else BEIR's when that is (``ours`` names the missing one)."""
    return beirs if beirs.is_file() and not ours.is_file() else ours


def _read_docs(path: Path, collection: str) -> Iterator[tuple[str, SourceDoc]]:
    """The documents of a ``docs.jsonl`` with their URLs, streamed (a collection may not fit
    in memory), empty ones included (each is judged, whether or not it can be found); the
    first bad line stops the reading."""
    with _open(path) as fh:
        records = jsonl.read_jsonl(
            fh, str(path), 0, TO_END, collection=collection, cap=LINE_CAP, fetched_at=0.0, keep_empty=True
        )
        for record in records:
            document = record.document
            if document is None:
                raise CollectionError(_bad_line(path, record))
            yield record.url, SourceDoc(document.source_id, document.title, document.text)


def _queries(path: Path) -> list[EvalQuery]:
    queries, seen = [], set()
    with _open(path) as fh:
        for offset, obj in jsonl.objects(fh, str(path), 0, TO_END, cap=LINE_CAP, fetched_at=0.0):
            if isinstance(obj, ArchiveRecord):
                raise CollectionError(_bad_line(path, obj))
            qid = str(obj["id"])
            if qid in seen:
                raise CollectionError(f"{path} at byte {offset:,}: duplicate query id {qid!r}")
            if not str(obj.get("text") or "").strip():
                raise CollectionError(f"{path} at byte {offset:,}: query {qid!r} has no text")
            seen.add(qid)
            queries.append(EvalQuery(qid, str(obj["text"])))
    return queries


def _open(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except OSError as exc:
        raise CollectionError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _bad_line(path: Path, record: ArchiveRecord) -> str:
    """A line the reader skipped, as the error that refuses the collection."""
    return record.error or f"{path} at byte {record.offset:,}: not a document ({record.kind})"


def _read_qrels(
    path: Path, doc_ids: set[str], query_ids: set[str], warnings: list[str]
) -> dict[str, dict[str, int]]:
    """The judgments, from any of the layouts collections are distributed in: ``query_id
    doc_id relevance`` with that header (tab-separated, data/ir's; BEIR's ``query-id
    corpus-id score``), TREC qrels lines ``query_id iteration doc_id relevance`` without a
    header (as trec_eval reads them), or headerless ``query_id doc_id relevance`` lines.

    Real collections judge a few documents their corpus lacks and topics their query file
    lacks: the documents are kept, as trec_eval keeps them (relevant documents no run can
    find, which published figures count), the topics skipped (nothing can search them), and
    both said in ``warnings``. A file where most judgments name unknown documents, or no
    judgment names a known query, is the wrong file and refused."""
    qrels: dict[str, dict[str, int]] = {}
    rows, width = _qrels_rows(path)
    unknown_docs: list[tuple[int, str]] = []
    unknown_queries: list[tuple[int, str]] = []
    for number, row in rows:
        if len(row) != width:
            raise CollectionError(f"{path}:{number}: expected {width} fields, found {len(row)}")
        qid, did, rel = (row[0], row[1], row[2]) if width == 3 else (row[0], row[2], row[3])
        if not _integer(rel):
            raise CollectionError(f"{path}:{number}: relevance {rel!r} is not an integer")
        if qid not in query_ids:
            unknown_queries.append((number, qid))
            continue
        if did not in doc_ids:
            unknown_docs.append((number, did))
        qrels.setdefault(qid, {})[did] = int(rel)
    if not qrels and not unknown_queries:
        raise CollectionError(f"{path}: no judgments below the header")
    if not qrels:
        number, qid = unknown_queries[0]
        raise CollectionError(
            f"{path}:{number}: unknown query id {qid!r}: no judgment names a query of queries.jsonl"
        )
    judged = sum(len(docs) for docs in qrels.values())
    if unknown_docs and len(unknown_docs) * 2 > judged:
        number, did = unknown_docs[0]
        raise CollectionError(
            f"{path}:{number}: unknown document id {did!r}: {len(unknown_docs)} of {judged} "
            "judgments name documents the corpus lacks (the qrels of another corpus?)"
        )
    if unknown_docs:
        number, did = unknown_docs[0]
        warnings.append(
            f"{len(unknown_docs)} of {judged} judgments name documents the corpus lacks (first "
            f"{did!r}, {path.name}:{number}): kept, as trec_eval keeps them; no run can find them"
        )
    if unknown_queries:
        number, qid = unknown_queries[0]
        topics = len({q for _, q in unknown_queries})
        warnings.append(
            f"{len(unknown_queries)} judgments of {topics} queries not in queries.jsonl skipped "
            f"(first {qid!r}, {path.name}:{number})"
        )
    return qrels


def _qrels_rows(path: Path) -> tuple[list[tuple[int, list[str]]], int]:
    """The judgment lines of a qrels file as (line number, fields), and how many fields
    each must have, from the file's layout (see ``_read_qrels``)."""
    with path.open(encoding="utf-8", newline="") as fh:
        lines = [(number, line.rstrip("\r\n")) for number, line in enumerate(fh, 1) if line.strip()]
    if not lines:
        raise CollectionError(f"{path}: no judgments")
    header = lines[0][1].split()
    if header in (["query_id", "doc_id", "relevance"], ["query-id", "corpus-id", "score"]):  # ours, BEIR's
        return [(n, line.split("\t")) for n, line in lines[1:]], 3  # tab-separated: ids may hold spaces
    if len(header) in (3, 4) and _integer(header[-1]):
        return [(n, line.split()) for n, line in lines], len(header)  # TREC's, or without iteration
    raise CollectionError(
        f"{path}:1: expected the header 'query_id\\tdoc_id\\trelevance', TREC qrels lines "
        f"'query_id iteration doc_id relevance' or lines 'query_id doc_id relevance', "
        f"found {' '.join(header)!r} (raw qrels in another order: normalize first)"
    )


def _integer(text: str) -> bool:
    return text.lstrip("-").isdigit()
