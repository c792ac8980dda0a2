"""The raw wikitext of the sample dump's articles: the input of the wikitext benchmarks.

Nimbus reads dumps with the archives' MediaWiki reader (``services.archives.formats.mediawiki``),
which gives clean text, not wikitext. The parser benchmark (``benchmarks.parsers``) compares
wikitext parsers on the wikitext itself, and the text corpus (``benchmarks.textcorpus``) keeps
the sentences it has always been built from (its figures stay comparable), so both read the
articles' wikitext here, with the clean-up the demo once applied (references, comments,
categories and interlanguage links).
"""

from __future__ import annotations

import bz2
import re
import xml.etree.ElementTree as ET
from pathlib import Path

REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
COMMENT = re.compile(r"<!--.*?-->", re.S)
CATEGORY = re.compile(r"\[\[(?:Category|[a-z]{2,3}(?:-[a-z]+)?):[^\]]*\]\]")  # and interlanguage links


def read_dump(dump_path: Path, limit: int | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(article title -> wikitext, redirect title -> target title) of the dump's namespace 0."""
    articles: dict[str, str] = {}
    redirects: dict[str, str] = {}
    with bz2.open(dump_path) as fh:
        for _event, elem in ET.iterparse(fh, events=("end",)):
            if not elem.tag.endswith("}page"):
                continue
            title = elem.findtext("{*}title") or ""
            redirect = elem.find("{*}redirect")
            if elem.findtext("{*}ns") == "0":
                if redirect is not None:
                    redirects[title] = redirect.get("title", "")
                elif limit is None or len(articles) < limit:
                    articles[title] = elem.findtext("{*}revision/{*}text") or ""
            elem.clear()
    return articles, redirects
