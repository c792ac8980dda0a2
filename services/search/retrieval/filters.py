"""The query operators that restrict which documents may be results: ``site:``,
``-site:``, ``filetype:``, ``intitle:`` and a ``+word`` beside optional words become one
boolean mask over doc numbers.

The retrieval ranks as always and only skips documents outside the mask (the same
way near-duplicates are skipped), so operators combine with words, phrases, OR,
exclusions and paging, and the result count is the count of matching documents.

Host and type per document come from the documents table, once per index version
(``DocFacts``: two small arrays, a few bytes per document); ``intitle:`` reads the
postings' title frequencies in the segment. Pure: the service loads the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from services.search.query.language import ParsedQuery, split_site
from services.search.retrieval.segment import SegmentIndex
from services.storage.formats.blocks import ContentType


@dataclass(frozen=True)
class DocFacts:
    """Host and stored type of every document of one index version, by doc number."""

    hosts: list[str]  # distinct "host:port" (the scheme's default port when none), lower case
    host_of: np.ndarray  # int32 per doc number: index into ``hosts``, -1 when unknown
    type_of: np.ndarray  # uint8 per doc number: ContentType (OTHER when unknown)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, str, str]], num_docs: int) -> DocFacts:
        """From (doc_num, url, content_type) rows; rows beyond ``num_docs`` (documents the
        index does not hold yet) are left out."""
        host_ids: dict[str, int] = {}
        host_of = np.full(num_docs, -1, dtype=np.int32)
        type_of = np.zeros(num_docs, dtype=np.uint8)
        for doc_num, url, content_type in rows:
            if not 0 <= doc_num < num_docs:
                continue
            host = _host_port(url)
            host_of[doc_num] = host_ids.setdefault(host, len(host_ids))
            type_of[doc_num] = stored_type(content_type)
        return cls(list(host_ids), host_of, type_of)

    def with_rows(self, rows: Iterable[tuple[int, str, str]], num_docs: int) -> DocFacts:
        """These facts for ``num_docs`` documents, ``rows`` (documents new or fetched again)
        set over them: a delta's documents added without reading the others again."""
        hosts = list(self.hosts)
        host_ids = {host: i for i, host in enumerate(hosts)}
        host_of = np.full(num_docs, -1, dtype=np.int32)
        type_of = np.zeros(num_docs, dtype=np.uint8)
        kept = min(num_docs, self.host_of.shape[0])
        host_of[:kept] = self.host_of[:kept]
        type_of[:kept] = self.type_of[:kept]
        for doc_num, url, content_type in rows:
            if not 0 <= doc_num < num_docs:
                continue
            host = _host_port(url)
            if host not in host_ids:
                host_ids[host] = len(hosts)
                hosts.append(host)
            host_of[doc_num] = host_ids[host]
            type_of[doc_num] = stored_type(content_type)
        return DocFacts(hosts, host_of, type_of)

    def on_sites(self, sites: list[str]) -> np.ndarray:
        """Documents on any of ``sites`` or their subdomains."""
        wanted = [i for i, host in enumerate(self.hosts) if any(on_site(host, s) for s in sites)]
        return np.isin(self.host_of, np.asarray(wanted, dtype=np.int32))

    def of_types(self, names: list[str]) -> np.ndarray:
        codes = [c for name in names if (c := type_code(name)) is not None]
        return np.isin(self.type_of, np.asarray(codes, dtype=np.uint8))


DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_port(url: str) -> str:
    """ "host:port" of ``url`` (IPv6 bracketed), the scheme's default port when none is
    written; "" when it has no host."""
    try:
        parts = urlsplit(url)
        name, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return ""
    if not name:
        return ""
    port = port or DEFAULT_PORTS.get(parts.scheme.lower())
    name = f"[{name}]" if ":" in name else name
    return f"{name}:{port}" if port else name


def on_site(host: str, site: str) -> bool:
    """``site:nasa.gov`` holds nasa.gov and www.nasa.gov on any port, not fakenasa.gov;
    ``site:127.0.0.1:8001`` only that port (``http://nasa.gov/`` is on port 80).
    ``host`` as ``DocFacts`` keeps it, ``site`` as the query parser writes it."""
    name, port = split_site(host)
    want, want_port = split_site(site)
    if want_port is not None and port != want_port:
        return False
    return name == want or name.endswith("." + want)


def stored_type(content_type: str) -> int:
    """The documents table holds a MIME type (or, from older ingests, a type name)."""
    value = (content_type or "").strip()
    if "/" in value:
        return int(ContentType.from_mime(value))
    return int(ContentType.__members__.get(value.upper(), ContentType.OTHER))


def type_code(name: str) -> int | None:
    """A ``filetype:`` name's stored type, or None for a type never stored (matches nothing)."""
    member = ContentType.__members__.get(name.upper())
    return None if member is None or member == ContentType.OTHER else int(member)


def titles_holding(index: SegmentIndex, term: str) -> np.ndarray:
    """Doc numbers whose title holds ``term`` (its postings with a title frequency)."""
    term_id = index.term_id(term)
    if term_id is None:
        return np.zeros(0, dtype=np.uint32)
    docs = index.posting_docs(term_id)
    return docs[index.field_tfs_of("title", term_id) > 0]


def operator_mask(query: ParsedQuery, index: SegmentIndex, facts: DocFacts | None) -> np.ndarray | None:
    """True for every document the operators allow; None when the query has none.

    ``facts`` is needed only for site: and filetype: (``needs_facts``)."""
    if not query.filtered:
        return None
    mask = np.ones(index.num_docs, dtype=bool)
    if needs_facts(query):
        if facts is None:
            raise ValueError("site: and filetype: need the documents' hosts and types (DocFacts)")
        if query.sites:
            mask &= facts.on_sites(query.sites)
        if query.excluded_sites:
            mask &= ~facts.on_sites(query.excluded_sites)
        if query.filetypes:
            mask &= facts.of_types(query.filetypes)
    for term in query.in_title:
        holding = np.zeros(index.num_docs, dtype=bool)
        holding[titles_holding(index, term)] = True
        mask &= holding
    for term in query.required if query.some_required else ():
        mask &= holding_word(index, query.forms_of(term))
    return mask


def holding_word(index: SegmentIndex, forms: list[str]) -> np.ndarray:
    """True for the documents holding any of a ``+``-required word's ``forms`` (its analyses in
    the query's languages); none when the index holds none of them."""
    holding = np.zeros(index.num_docs, dtype=bool)
    for form in forms:
        term_id = index.term_id(form)
        if term_id is not None:
            holding[index.posting_docs(term_id)] = True
    return holding


def needs_facts(query: ParsedQuery) -> bool:
    return bool(query.sites or query.excluded_sites or query.filetypes)
