"""A worker's acknowledgement of fetched batches: the manifest the committer commits from.

In a crawl cluster a worker writes its pages' content and record blocks itself
and then acknowledges its batches with one small manifest per flush (a gzip
JSON blob beside the blocks): per leased URL how it ended, and for a page
its docId, where its bytes and record landed, and the fields of its
documents row; its out-links come as frontier URLs with the priority the
worker gave them (the worker knows its hosts' dead prefixes, ``frontier.dead_prefixes``).
The committer needs nothing else: it never reads a page or a record.

JSON, not pickle: a manifest crosses machines and is read from a shared
bucket, so reading one must never run code. Pure logic; the I/O is in
``worker_flush`` (worker) and ``cluster.ordered_commit`` (committer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ujson
from isal import igzip

from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.errors import AckManifestError
from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.web.parse import ParsedDoc
from services.storage.formats.block_pair import PLACEMENT_COLUMNS
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import INFLATE_ERROR

# 2: an out-link found on the page itself as [url, priority, url_id, host];
# 3: those links of a page in four columns ("links": see ``_columns``);
# 4: a result read from an archive says so ("archived"), an alias names its target ("alias").
#    An alias may carry its own title ("alias_title"): optional, so no new format (a committer
#    that does not know it stores the alias without it).
FORMAT = 4
READS = (1, 2, 3, 4)  # older formats are read too: workers upgraded after the committer
KEY_CHARS = 40  # a url_id: the hex SHA-1 of the URL
SEP = "\n"  # between a page's link URLs (and hosts): normalized URLs hold no raw newline
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
    # ujson: the committer decodes every manifest of the cluster, several times faster than
    # the standard module (docs/performance-notes.md).
    return igzip.compress(ujson.dumps(data, ensure_ascii=False, escape_forward_slashes=False).encode(), 1)


def decode(
    data: bytes, name: str, finished: Callable[[str], bool] | None = None
) -> tuple[str, list[AckedBatch]]:
    """(worker, batches) of a manifest; a damaged or foreign one raises naming the blob.

    ``finished(url_id)`` says which out-links lead to pages the committer saw finished:
    those are left out here, before a ``NewUrl`` is made of them (on a site, about half
    of all links, whose objects would be a sizeable share of the committer's CPU:
    docs/performance-notes.md)."""
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
    }
    # A link on the page (one level down, from this page, no redirect, one in-link, its
    # url_id known) goes in the page's columns, anything else in all eight fields: a
    # manifest is mostly links, and a JSON list per link (format 2, still read) would be most
    # of the committer's decoding (docs/performance-notes.md).
    links = []
    other = []
    for n in r.found:
        if (
            n.depth == depth
            and n.discovered_from == r.url_id
            and n.hops == 0
            and n.inlinks == 1
            and len(n.key) == KEY_CHARS
            and SEP not in n.url
            and SEP not in n.host
        ):
            links.append(n)
        else:
            other.append([n.url, n.depth, n.priority, n.discovered_from, n.hops, n.inlinks, n.key, n.host])
    if r.archived:
        out["archived"] = True
    if r.alias_of:
        out["alias"] = r.alias_of
        if r.alias_title:
            out["alias_title"] = r.alias_title
    out["found"] = other
    if links:
        out["links"] = _columns(links)
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


def _columns(links: list[NewUrl]) -> list[Any]:
    """A page's links as [URLs joined by SEP, priorities, url_ids run together, hosts
    joined by SEP]: four JSON values a page instead of a list and four values a link."""
    return [
        SEP.join(n.url for n in links),
        [n.priority for n in links],
        "".join(n.key for n in links),
        SEP.join(n.host for n in links),
    ]


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
    if "links" in u:  # format 3
        urls, priorities, keys, hosts = u["links"]
        urls, hosts = urls.split(SEP), hosts.split(SEP)
        if not len(urls) == len(priorities) == len(hosts) == len(keys) // KEY_CHARS:
            raise ValueError(f"the links of {uid} do not line up: {len(urls)} URLs, {len(keys)} key chars")
        for i, url in enumerate(urls):
            key = keys[i * KEY_CHARS : (i + 1) * KEY_CHARS]
            if not (finished and finished(key)):
                found.append(NewUrl(url, depth + 1, priorities[i], uid, 0, 1, key, hosts[i]))
    return UrlResult(
        url_id=uid,
        url=str(u["url"]),
        depth=depth,
        state=UrlState(u["state"]),
        status=u["status"],
        error=u["error"],
        doc=doc,
        counters=Counter(u["counters"]),
        retry_at=u["retry_at"],
        interval=u["interval"],
        found=found,
        priority=u["priority"],
        archived=bool(u.get("archived", False)),
        alias_of=str(u.get("alias", "")),
        alias_title=str(u.get("alias_title", "")),
    )


@dataclass
class AckedDoc(FetchedDoc):
    """A page as a manifest names it: its bytes are in a block already, not here."""

    length: int = 0
