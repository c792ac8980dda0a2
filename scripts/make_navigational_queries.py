"""Derive data/ir/navigational/queries.jsonl from the real sites in data/ (data/README.md, section 1b).

    .venv/bin/python scripts/make_navigational_queries.py > data/ir/navigational/queries.jsonl

Every HTML page (status 200) of the web archives (``warc/*.warc.gz``, ``warc/*.warc``,
``warc/*.arc.gz``) and every article of the wiki dump is read through the archive readers,
as an archive crawl reads them, and gives queries by fixed rules, written before any
ranking was measured and never adjusted to it:

* a home page (a root URL, ``services.ranking.entry_pages.url_kind``): its host's name, the
  label before the public suffix without ``www`` ("www.iana.org": ``iana``; the suffixes
  are the generic ones the data holds), and its title as written ("Internet Assigned
  Numbers Authority"): kinds ``home: host name`` and ``home: title``;
* a section page (a subroot: one path segment, "/time-zones"): the segment's words
  (``time zones``) and its title: kinds ``section: path`` and ``section: title``;
* every other page (an inner web page, a wiki article): its title, kind ``named page:
  title`` (TREC's named-page finding): the entry-page factor must not push these down.

The answer is the page's URL as the archive has it. A query whose words are all stop words
(the section ``/about``) is left out: no engine can answer it from words. Pages are taken in
file order; a URL seen again (a second capture of a home page) gives nothing new.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from services.archives.bundle import ArchiveType
from services.demo.sampleweb import WIKI_DUMP, archive_records
from services.ranking.entry_pages import UrlKind, url_kind
from services.search.query.language import plain_query
from services.text.extract.html import parse_html

DATA = Path(__file__).resolve().parents[1] / "data"
WEB_ARCHIVES = ("warc/iana.warc.gz", "warc/example.arc.gz", "warc/example-iana.org-chunked.warc")
SUFFIXES = {"com", "org", "net", "edu", "gov", "int"}  # the data's hosts end in these


def host_name(url: str) -> str:
    """The host's name as people type it: the label before the public suffix, without www."""
    labels = (urlsplit(url).hostname or "").split(".")
    while labels and labels[-1] in SUFFIXES:
        labels.pop()
    labels = [label for label in labels if label != "www"]
    return labels[-1] if labels else ""


def path_words(url: str) -> str:
    """The words of a section's path segment ("/time-zones" -> "time zones")."""
    return " ".join(re.split(r"[^0-9A-Za-z]+", urlsplit(url).path)).strip()


def pages() -> Iterator[tuple[str, str, str]]:
    """(source file, URL, title) of every HTML page and wiki article, in file order."""
    for name in WEB_ARCHIVES:
        for record in archive_records(DATA / name, ArchiveType.WARC):
            payload = record.payload
            if payload is None or payload.status != 200:
                continue
            if not (payload.content_type or "").startswith("text/html"):
                continue
            yield name, record.url, parse_html(payload.body, record.url).title.strip()
    for record in archive_records(DATA / WIKI_DUMP, ArchiveType.MEDIAWIKI):
        if record.document is not None and not record.redirect_to:
            yield WIKI_DUMP, record.url, record.document.title.strip()


def queries() -> Iterator[dict[str, str]]:
    seen: set[str] = set()
    for source, url, title in pages():
        if url in seen or not title:
            continue
        seen.add(url)
        kind = url_kind(url)
        if kind == UrlKind.ROOT:
            wanted = [("home: host name", host_name(url)), ("home: title", title)]
        elif kind == UrlKind.SUBROOT and source != WIKI_DUMP:
            wanted = [("section: path", path_words(url)), ("section: title", title)]
        else:
            wanted = [("named page: title", title)]
        for what, text in wanted:
            if text and plain_query(text).terms:
                yield {"text": text, "url": url, "kind": what, "source": source}


def main() -> int:
    for number, query in enumerate(queries(), start=1):
        print(json.dumps({"id": str(number), **query}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
