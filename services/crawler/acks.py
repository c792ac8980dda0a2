"""A worker's acknowledgement of fetched batches: the manifest the committer commits from.

In a crawl cluster a worker writes its pages' content and record blocks itself
and then acknowledges its batches with one small manifest per flush (a gzip
JSON blob beside the blocks): per leased URL how it ended, and for a page
its docId, where its bytes and record landed, and the fields of its
documents row; its out-links come as frontier URLs with the priority the
worker gave them (the worker knows its hosts' dead prefixes, ``yields.py``).
The committer needs nothing else: it never reads a page or a record.

JSON, not pickle: a manifest crosses machines and is read from a shared
bucket, so reading one must never run code. Pure logic; the I/O is in
``acker`` (worker) and ``ordered_commit`` (committer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ujson
from isal import igzip

from services.crawler.errors import AckManifestError
from services.crawler.frontier import NewUrl
from services.crawler.parse import ParsedDoc
from services.crawler.results import FetchedDoc, UrlResult
from services.storage.block_pair import PLACEMENT_COLUMNS
from services.storage.blocks import ContentType
from services.storage.records import INFLATE_ERROR

FORMAT = 2  # 2: an out-link found on the page itself as [url, priority, url_id, host]
READS = (1, 2)  # format 1 (every link in eight fields) is read too: workers upgraded after the committer
PLACEMENT = PLACEMENT_COLUMNS  # the block columns a manifest carries per page


@dataclass
class AckedBatch:
    """One leased batch as its worker acknowledged it."""

    seq: int
    results: list[UrlResult]
    placements: dict[str, dict[str, Any]] = field(default_factory=dict)  # url_id -> block columns


def manifest_name(first_seq: int, token: str) -> str:
    return f"acks/{first_seq:010d}-{token}.json.gz"


def encode(worker: str, batches: list[AckedBatch]) -> bytes:
    """The manifest of one flush: every batch's results, links already turned into frontier URLs."""
    data = {
        "format": FORMAT,
        "worker": worker,
        "batches": [
            {"seq": b.seq, "urls": [_url(r, b.placements.get(r.url_id)) for r in b.results]} for b in batches
        ],
    }
    # ujson: the committer decodes every manifest of the cluster, 3-4x the standard module.
    return igzip.compress(ujson.dumps(data, ensure_ascii=False, escape_forward_slashes=False).encode(), 1)


def decode(
    data: bytes, name: str, finished: Callable[[str], bool] | None = None
) -> tuple[str, list[AckedBatch]]:
    """(worker, batches) of a manifest; a damaged or foreign one raises naming the blob.

    ``finished(url_id)`` says which out-links lead to pages the committer saw finished:
    those are left out here, before a ``NewUrl`` is made of them (on a site, about half
    of all links; the objects were a tenth of the committer's CPU)."""
    try:
        parsed = ujson.loads(igzip.decompress(data))
        if parsed.get("format") not in READS:
            raise AckManifestError(
                f"ack manifest {name} has format {parsed.get('format')!r}, this committer reads "
                f"{', '.join(map(str, READS))}: run workers and committer of the same Nimbus version"
            )
        batches = [
            AckedBatch(
                int(b["seq"]),
                [_result(u, finished) for u in b["urls"]],
                {u["url_id"]: u["doc"]["placement"] for u in b["urls"] if u.get("doc")},
            )
            for b in parsed["batches"]
        ]
        return str(parsed["worker"]), batches
    except AckManifestError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, INFLATE_ERROR) as exc:
        raise AckManifestError(
            f"ack manifest {name} cannot be read ({exc!r}); the batch is handed out again "
            "once its lease is released"
        ) from exc


def _url(r: UrlResult, placement: dict[str, Any] | None) -> dict[str, Any]:
    depth = r.depth + 1
    out: dict[str, Any] = {
        "url_id": r.url_id,
        "url": r.url,
        "depth": r.depth,
        "state": r.state,
        "status": r.status,
        "error": r.error,
        "retry_at": r.retry_at,
        "interval": r.interval,
        "priority": r.priority,
        "counters": dict(r.counters),
        # A link on the page (one level down, from this page, no redirect, one in-link) in
        # four fields, anything else in all eight: a manifest is mostly links, and its size
        # is the committer's JSON decoding and the worker's encoding.
        "found": [
            [n.url, n.priority, n.key, n.host]
            if n.depth == depth and n.discovered_from == r.url_id and n.hops == 0 and n.inlinks == 1
            else [n.url, n.depth, n.priority, n.discovered_from, n.hops, n.inlinks, n.key, n.host]
            for n in r.found
        ],
    }
    if r.doc is not None and placement is not None:
        d, p = r.doc, r.doc.parsed
        out["doc"] = {
            "url": d.url,
            "doc_id": d.doc_id,
            "status": d.status,
            "fetched_at": d.fetched_at,
            "content_type": p.content_type.mime,
            "title": p.title,
            "lang": p.lang,
            "length": len(d.body),
            "placement": {k: placement[k] for k in PLACEMENT},
        }
    return out


def _result(u: dict[str, Any], finished: Callable[[str], bool] | None) -> UrlResult:
    doc = None
    if u.get("doc"):
        d = u["doc"]
        parsed = ParsedDoc(ContentType.from_mime(d["content_type"]), title=d["title"], lang=d["lang"])
        doc = AckedDoc(d["url"], b"", parsed, float(d["fetched_at"]), int(d["status"]), str(d["doc_id"]))
        doc.length = int(d["length"])
    uid, depth = str(u["url_id"]), int(u["depth"])
    found = []
    for e in u["found"]:  # the two forms of ``_url``; the url_id ("": the committer computes it)
        if len(e) == 4:
            if not (finished and e[2] and finished(e[2])):
                found.append(NewUrl(e[0], depth + 1, e[1], uid, 0, 1, e[2], e[3]))
        elif not (finished and e[6] and finished(e[6])):
            found.append(NewUrl(*e))
    return UrlResult(
        url_id=uid,
        url=str(u["url"]),
        depth=depth,
        state=str(u["state"]),
        status=u["status"],
        error=u["error"],
        doc=doc,
        counters=Counter(u["counters"]),
        retry_at=u["retry_at"],
        interval=u["interval"],
        found=found,
        priority=u["priority"],
    )


@dataclass
class AckedDoc(FetchedDoc):
    """A page as a manifest names it: its bytes are in a block already, not here."""

    length: int = 0
