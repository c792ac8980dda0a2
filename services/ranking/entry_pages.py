"""Entry pages: which documents a query names, and what that does to their rank. Pure numpy.

A query that names a site ("iana", "internet assigned numbers authority") wants the
site's home page, and a query that names a section ("time zones") the section's entry
page; inner pages that mention the name many times must not come first. Three facts
decide it, as in the TREC web tracks' home-page finding:

* **The URL's form** (Kraaij, Westerveld & Hiemstra, SIGIR 2002): a *root* (``/``,
  ``/index.html``) is far likelier an entry page than a *subroot* (one directory:
  ``/time-zones``, ``/docs/``), a subroot than a *path* (deeper), a path than a *file*
  (a name with an extension, or any query string). Computed once per document at
  index build (``url_kind``), stored in the segment (``url_kind``).
* **The site's name** (``site_names``, site-level evidence computed at index build):
  the words in the titles of at least half of a host's pages (and of two or more), as
  "IANA — ..." heads every page of www.iana.org and "... - Sample Wiki" ends every
  article of a wiki. A home page titled "Welcome" or "Acme: tools for the workshop" is
  still named by "acme" when the site's pages call it that.
* **Whether the query names the page** (``names_page``): only then does the URL's form
  count, so an informational query never moves (Song et al., ECIR 2006, "URL hit
  priors": where the query's words hit the URL matters, not its depth alone). A page is
  named when every query word is in its URL words (for a root: its host name; not "www",
  a generic suffix or a number) or, for a root, in its site's name; or when the query's
  words are most of its title or most of the anchor text of links to it (Craswell,
  Hawking & Robertson, SIGIR 2001: anchor text finds sites). "Most": the query *is* the
  name, not one word of it ("numbers" does not name "Internet Assigned Numbers
  Authority", nor "domains" "Example Domain").

What naming does (``services.search.retrieval.entry_pages``): a named home page is listed
first, before every page that is not one (the navigational answer web engines give), and
a named section page's score is multiplied by ``1 + V / 2`` (``V``: the setting
``entry_page_weight``, 1 by default; a named root's by ``1 + V``, which orders named roots
among themselves as their text and links do). Sections get a bounded factor, not a place:
"history" names the /history section of every site that has one, and the best page about
history must still be able to beat them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import IntEnum

import numpy as np


class UrlKind(IntEnum):
    """The URL forms of Kraaij et al. (stored as their value, uint8, in the segment)."""

    ROOT = 0  # http://host/ , http://host/index.html
    SUBROOT = 1  # one directory: http://host/docs/ , http://host/time-zones
    PATH = 2  # deeper: http://host/docs/api/
    FILE = 3  # a file name with an extension, or a query string: /a/b.pdf, /?p=2


# The default documents a server shows for a directory: "/index.html" is the root.
_DEFAULT_PAGE = re.compile(r"(?i)^(index|default|home)\.(s?html?|php\d?|aspx?|jsp|cgi)$")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")

# How strongly each form says "entry page", as a share of the factor's weight: Kraaij et
# al.'s order (root > subroot > path > file), kept to the two forms that are entry pages.
ENTRY_WEIGHT = np.array([1.0, 0.5, 0.0, 0.0], dtype=np.float64)  # by UrlKind value

# Words nearly every URL holds (the scheme is not indexed): a host's "www" or ".org" names
# no site, nor do numbers (IP addresses, ports: every loopback site is "127 0 0 1").
GENERIC_URL_WORDS = frozenset({"www", "com", "org", "net", "edu", "gov", "int", "info", "biz", "co", "ac"})


def names_by_url(term: str) -> bool:
    """Whether ``term`` found in a URL's words can name a site (not a generic label or a number)."""
    return term not in GENERIC_URL_WORDS and not term.isdigit()


NAME_SHARE = 0.5  # the query's words are most of the title's (or anchor text's) words: it names the page


def url_kind(url: str) -> UrlKind:
    """The form of ``url`` (a normalized absolute URL); anything unparsable is a FILE."""
    rest = url.split("://", 1)[1] if "://" in url else url
    rest = rest.split("#", 1)[0]
    if "?" in rest:
        return UrlKind.FILE  # a dynamic page, not a site's or section's entry
    slash = rest.find("/")
    path = "" if slash < 0 else rest[slash:]
    segments = [s for s in path.split("/") if s]
    if segments and not path.endswith("/") and _DEFAULT_PAGE.match(segments[-1]):
        segments.pop()
    elif segments and not path.endswith("/") and _EXTENSION.search(segments[-1]):
        return UrlKind.FILE
    if not segments:
        return UrlKind.ROOT
    return UrlKind.SUBROOT if len(segments) == 1 else UrlKind.PATH


def url_kinds(urls: Iterable[tuple[int, str]], num_docs: int) -> np.ndarray:
    """``url_kind`` by doc number from (doc_num, url) pairs; a number without a URL is a PATH
    (no entry-page evidence)."""
    kinds = np.full(num_docs, UrlKind.PATH, dtype=np.uint8)
    for num, url in urls:
        if 0 <= num < num_docs:
            kinds[num] = url_kind(url)
    return kinds


def names_page(
    in_url: np.ndarray,
    in_site_name: np.ndarray,
    title_tf: np.ndarray,
    title_len: np.ndarray,
    anchor_tf: np.ndarray,
    anchor_len: np.ndarray,
) -> np.ndarray:
    """Whether the query names each candidate page (one row per page, one column per query
    word): every word in its URL words or (a root's) site name, or the query's words more
    than ``NAME_SHARE`` of its title or of the anchor text of links to it (every word in it).

    ``in_url`` and ``in_site_name`` (bool), ``title_tf`` and ``anchor_tf`` (the word's
    frequency in the field) are pages x words; ``title_len`` and ``anchor_len`` are each
    page's field lengths in terms.
    """
    if in_url.shape[1] == 0:
        return np.zeros(in_url.shape[0], dtype=bool)
    by_name: np.ndarray = (in_url | in_site_name).all(axis=1)
    named: np.ndarray = by_name | _most_of(title_tf, title_len) | _most_of(anchor_tf, anchor_len)
    return named


def _most_of(tf: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Every word in the field, and the words more than ``NAME_SHARE`` of its terms."""
    tf = tf.astype(np.float64)
    length = length.astype(np.float64)
    most: np.ndarray = (tf > 0).all(axis=1) & (tf.sum(axis=1) > NAME_SHARE * length) & (length > 0)
    return most


def entry_factor(kinds: np.ndarray, named: np.ndarray, weight: float) -> np.ndarray:
    """``1 + weight * ENTRY_WEIGHT[kind]`` where the page is named, 1 elsewhere."""
    return 1.0 + weight * np.where(named, ENTRY_WEIGHT[np.minimum(kinds, len(ENTRY_WEIGHT) - 1)], 0.0)


SITE_NAME_SHARE = 0.5  # a word in the titles of at least half of a host's pages names the site
SITE_NAME_PAGES = 2  # ... and of two pages at least: one page's title is no site's name


def site_names(
    post_offsets: np.ndarray,
    post_docs: np.ndarray,
    tf_title: np.ndarray,
    doc_hosts: np.ndarray,
    kinds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each root's site name as term ids, CSR by document: (offsets, N + 1; terms,
    ascending per document). A term names the site of host ``h`` when it is in the titles
    of at least ``SITE_NAME_SHARE`` of ``h``'s pages and of ``SITE_NAME_PAGES`` or more;
    only roots (``UrlKind.ROOT``) get one. ``doc_hosts``: a host id per document."""
    num_docs = int(doc_hosts.shape[0])
    num_hosts = int(doc_hosts.max()) + 1 if num_docs else 0
    # The term of each posting with a title frequency only (a few in a hundred): found in the
    # offsets, not read off a term id repeated for every posting (an int64 per posting of the
    # segment, fresh memory each build).
    titled = np.flatnonzero(tf_title > 0)
    term_of = np.searchsorted(post_offsets.astype(np.int64), titled, side="right") - 1
    # Postings are unique per (term, doc): a (term, host) pair's count is its pages.
    keys = term_of * max(num_hosts, 1) + doc_hosts[post_docs[titled]].astype(np.int64)
    pairs, pages = np.unique(keys, return_counts=True)
    term, host = np.divmod(pairs, max(num_hosts, 1))
    host_pages = np.bincount(doc_hosts.astype(np.int64), minlength=num_hosts)
    keep = (pages >= SITE_NAME_PAGES) & (pages >= SITE_NAME_SHARE * host_pages[host])
    term, host = term[keep], host[keep]  # sorted by term, then host
    roots = np.flatnonzero(kinds == UrlKind.ROOT)
    # Each root gets its host's terms (ascending: the pairs are sorted by term, and the
    # stable sort by host keeps that order within a host), gathered without a loop.
    by_host = np.argsort(host, kind="stable")
    host_start = np.searchsorted(host[by_host], np.arange(num_hosts + 1))
    root_hosts = doc_hosts[roots].astype(np.int64)
    counts = host_start[root_hosts + 1] - host_start[root_hosts]
    per_doc = np.zeros(num_docs, dtype=np.int64)
    per_doc[roots] = counts
    offsets = np.zeros(num_docs + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum(per_doc)
    first = np.cumsum(counts) - counts  # each root's first entry in the output
    within = np.arange(int(counts.sum())) - np.repeat(first, counts)
    terms = term[by_host[np.repeat(host_start[root_hosts], counts) + within]].astype(np.uint32)
    return offsets, terms
