"""Judged test collections in the JSONL layout of data/ir/cranfield, or BEIR's.

``docs.jsonl`` ({"id", "title", "text"}), ``queries.jsonl`` ({"id", "text"}) and
``qrels.tsv`` (header ``query_id doc_id relevance``, or TREC qrels lines); BEIR's
``corpus.jsonl`` and ``qrels/test.tsv`` stand for the first and last, its ``_id`` for
``id``. Loading checks what a wrong file would silently spoil: unknown ids in the
judgments, duplicate ids, missing fields, and says which file and line is at fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from services.eval.errors import CollectionError
from services.ingest.collection import json_lines, read_docs
from services.ingest.errors import SourceFormatError
from services.storage.documents import SourceDoc

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

    @property
    def name(self) -> str:
        """The collection's folder name (it names its documents' host)."""
        return self.root.resolve().name

    def docs(self) -> Iterator[SourceDoc]:
        """Stream the documents (a collection may not fit in memory)."""
        yield from read_docs(_docs_file(self.root))

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
    try:
        for doc in read_docs(docs_file):
            if doc.id in doc_ids:
                raise CollectionError(f"{docs_file}: duplicate document id {doc.id!r}")
            doc_ids.add(doc.id)
    except SourceFormatError as exc:
        raise CollectionError(str(exc)) from exc
    queries = _read_queries(root / "queries.jsonl")
    qrels = _read_qrels(qrels_file, doc_ids, {q.id for q in queries})
    return Collection(root, queries, qrels, doc_ids)


def _docs_file(root: Path) -> Path:
    return _ours_else_beirs(root / "docs.jsonl", root / "corpus.jsonl")


def _qrels_file(root: Path) -> Path:
    return _ours_else_beirs(root / "qrels.tsv", root / "qrels" / "test.tsv")


def _ours_else_beirs(ours: Path, beirs: Path) -> Path:
    """Our file when it is there, else BEIR's when that is (``ours`` names the missing one)."""
    return beirs if beirs.is_file() and not ours.is_file() else ours


def _read_queries(path: Path) -> list[EvalQuery]:
    try:
        return _queries(path)
    except SourceFormatError as exc:
        raise CollectionError(str(exc)) from exc


def _queries(path: Path) -> list[EvalQuery]:
    queries, seen = [], set()
    for number, obj in json_lines(path):
        qid = str(obj["id"])
        if qid in seen:
            raise CollectionError(f"{path}:{number}: duplicate query id {qid!r}")
        if not str(obj.get("text") or "").strip():
            raise CollectionError(f"{path}:{number}: query {qid!r} has no text")
        seen.add(qid)
        queries.append(EvalQuery(qid, str(obj["text"])))
    return queries


def _read_qrels(path: Path, doc_ids: set[str], query_ids: set[str]) -> dict[str, dict[str, int]]:
    """The judgments, from either layout: ``query_id doc_id relevance`` with that header
    (tab-separated, data/ir's), or TREC's own qrels lines, ``query_id iteration doc_id
    relevance`` separated by spaces or tabs without a header (as trec_eval reads them), so
    a collection's qrels work as distributed."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        lines = [(number, line.rstrip("\r\n")) for number, line in enumerate(fh, 1) if line.strip()]
    if not lines:
        raise CollectionError(f"{path}: no judgments")
    header = lines[0][1].split()
    if header in (["query_id", "doc_id", "relevance"], ["query-id", "corpus-id", "score"]):  # ours, BEIR's
        # Tab-separated: an id may hold spaces.
        rows, width = [(n, line.split("\t")) for n, line in lines[1:]], 3
    elif len(header) == 4:
        rows, width = [(n, line.split()) for n, line in lines], 4  # TREC: qid iter docno rel
    else:
        raise CollectionError(
            f"{path}:1: expected the header 'query_id\\tdoc_id\\trelevance' or TREC qrels lines "
            f"'query_id iteration doc_id relevance', found {' '.join(header)!r} "
            "(raw qrels in another order: normalize first)"
        )
    for number, row in rows:
        if len(row) != width:
            raise CollectionError(f"{path}:{number}: expected {width} fields, found {len(row)}")
        qid, did, rel = (row[0], row[1], row[2]) if width == 3 else (row[0], row[2], row[3])
        if qid not in query_ids:
            raise CollectionError(f"{path}:{number}: unknown query id {qid!r}")
        if did not in doc_ids:
            raise CollectionError(f"{path}:{number}: unknown document id {did!r}")
        try:
            qrels.setdefault(qid, {})[did] = int(rel)
        except ValueError as exc:
            raise CollectionError(f"{path}:{number}: relevance {rel!r} is not an integer") from exc
    return qrels
