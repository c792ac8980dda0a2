"""Recall of distinctive words: does a word a reader sees on a page find that page?

    .venv/bin/python -m benchmarks.word_recall [--per-page 40] [--max-df 3] [--depth 10]

The sample web of ``nimbus demo`` (``services.demo.sampleweb``: the 2014 crawl of
www.iana.org in ``data/warc/iana.warc.gz``, served at its own paths, and the Wikipedia
articles of ``data/wiki`` as HTML pages) is crawled over loopback HTTP by the real crawler
and indexed by the real build (inline MapReduce runner), in a state directory of its own.

For every HTML page, the words a reader sees (``visible_words``: the title, the whole body
text, menus, link lists and forms included, and the placeholders and button labels of its
forms; read from the stored bytes, independently of the extractor) that are in at most
``--max-df`` pages are its distinctive words; up to ``--per-page`` of them a page (a seeded
sample) are searched alone (``SearchService.ranked``, what the result page lists), and a word
counts as found when its page, or the near-duplicate it is folded into, is in the first
``--depth`` results. Words the analyzer drops (stop words) or splits (CJK) are not asked.

Two indexes over the same crawl, searched in one run:

* **before**: the index as it was before the nav field: the postings of words a page holds
  only in its nav field are left out, idf and impacts recomputed without them
  (``without_nav``), which is exactly the index the old extraction gave (the body text is
  unchanged, and nav text fed nothing else);
* **after**: the index as built, nav text a field at weight 0.25 (``services.ranking.bm25f``).

Each word is also placed by where the extractor put it on its page: in the page's text
(title, body, meta description) or only in its navigation text (menus, link lists, forms).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser
from sqlalchemy import select

from benchmarks.tables import format_table
from services.ranking.bm25f import DEFAULT_PARAMS, FIELD_NAMES, BM25FParams, bm25_idf, impacts
from services.ranking.impact_levels import impact_scales, quantize, term_maxima

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
_WORD = re.compile(r"\w+")
_HIDDEN = ["script", "style", "noscript", "template", "svg", "iframe", "object", "noframes"]
_BUTTONS = frozenset({"submit", "button", "reset"})


def visible_words(html: str) -> set[str]:
    """The lower-cased words a reader sees on a page: title, all of the body's text, and the
    placeholders and button labels of its forms. Words have a letter and 3+ characters."""
    tree = LexborHTMLParser(html)
    tree.strip_tags(_HIDDEN)
    parts = [node.text(deep=True, separator=" ") for node in tree.tags("title")[:1]]
    body = tree.body
    if body is not None:
        parts.append(body.text(deep=True, separator=" "))
    for tag in ("input", "textarea"):
        for node in tree.tags(tag):
            kind = (node.attributes.get("type") or "text").lower()
            if kind != "hidden":
                parts.append(node.attributes.get("placeholder") or "")
            if tag == "input" and kind in _BUTTONS:
                parts.append(node.attributes.get("value") or "")
    return {w for w in _WORD.findall(" ".join(parts).lower()) if len(w) >= 3 and not w.isdigit()}


def without_nav(arrays: dict[str, np.ndarray], params: BM25FParams = DEFAULT_PARAMS) -> dict[str, np.ndarray]:
    """The segment's arrays as an index without the nav field would hold them: postings found
    only in nav text dropped (with their forward-index entries), df, idf, impacts and the
    pruning bounds recomputed; nav frequencies and lengths zero. Terms left without postings
    stay in the dictionary (df 0: a query for one finds nothing)."""
    out = dict(arrays)
    nav = FIELD_NAMES.index("nav")
    others = [np.asarray(arrays[f"tf_{name}"]) for i, name in enumerate(FIELD_NAMES) if i != nav]
    keep = np.logical_or.reduce([tf > 0 for tf in others])
    df = np.asarray(arrays["df"]).astype(np.int64)
    num_docs = int(arrays["doc_lengths"].shape[0])
    term_of = np.repeat(np.arange(df.shape[0]), df)
    pos_counts = np.diff(np.asarray(arrays["pos_offsets"]).astype(np.int64))
    if pos_counts[~keep].any():
        raise ValueError("a nav-only posting has positions: nav text is not positional")
    new_df = np.bincount(term_of[keep], minlength=df.shape[0])
    out["df"] = new_df.astype(np.uint32)
    out["post_offsets"] = _offsets(new_df)
    out["pos_offsets"] = _offsets(pos_counts[keep])
    out["post_docs"] = np.asarray(arrays["post_docs"])[keep]
    for name in FIELD_NAMES:
        out[f"tf_{name}"] = np.asarray(arrays[f"tf_{name}"])[keep]
    out["tf_nav"] = np.zeros_like(out["tf_nav"])
    out["len_nav"] = np.zeros_like(np.asarray(arrays["len_nav"]))
    idf = bm25_idf(new_df, num_docs)
    out["idf"] = idf.astype(np.float32)
    tfs = [out[f"tf_{name}"] for name in FIELD_NAMES]
    lengths = [np.asarray(out[f"len_{name}"]) for name in FIELD_NAMES]
    post_impacts = impacts(out["post_docs"], tfs, term_of[keep], idf, lengths, params)
    out["impact_scale"] = impact_scales(idf, params.k1)
    out["post_impacts"] = quantize(post_impacts, out["impact_scale"], new_df)
    out["max_impact"] = term_maxima(out["post_impacts"], out["impact_scale"], out["post_offsets"])
    # The forward index lists every posting of a document: drop the ones dropped above.
    dropped = term_of[~keep] * num_docs + np.asarray(arrays["post_docs"])[~keep].astype(np.int64)
    fwd_offsets = np.asarray(arrays["fwd_offsets"]).astype(np.int64)
    fwd_doc = np.repeat(np.arange(num_docs), np.diff(fwd_offsets))
    fwd_keep = ~np.isin(np.asarray(arrays["fwd_terms"]).astype(np.int64) * num_docs + fwd_doc, dropped)
    out["fwd_terms"] = np.asarray(arrays["fwd_terms"])[fwd_keep]
    out["fwd_tfs"] = np.asarray(arrays["fwd_tfs"])[fwd_keep]
    out["fwd_offsets"] = _offsets(np.bincount(fwd_doc[fwd_keep], minlength=num_docs))
    return out


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths.astype(np.uint64), out=out[1:])
    return out


@dataclass
class Page:
    doc_num: int
    url: str
    site: str
    lang: str
    words: set[str]  # visible words
    text_terms: set[str]  # index terms of the extracted title, text and meta description
    nav_terms: set[str]  # index terms of the extracted navigation text


@dataclass
class Query:
    """One word asked for one page, and the page's rank for it in each index (None: not
    in the first MAX_RANK results)."""

    page: Page
    word: str
    term: str  # the word as the index holds it (analyzed in the page's language)
    df: int  # pages whose visible words hold it
    ranks: dict[str, int | None] = field(default_factory=dict)

    @property
    def place(self) -> str:
        """Where the extractor put the word's term on its page."""
        if self.term in self.page.text_terms:
            return "text"
        return "nav only" if self.term in self.page.nav_terms else "neither"


MAX_RANK = 1000  # "in the results at all": as deep as a results page can be read


def read_pages(settings: Any, sites: dict[str, str]) -> list[Page]:
    """Every stored HTML page of the crawl, with its visible and extracted words; ``sites``
    names the site of each origin."""
    from services.search.service import SearchService
    from services.storage.sql.models import Document
    from services.text.analysis.analyze import analyze
    from services.text.extract.charset import decode_body
    from services.text.extract.html import parse_html

    service = SearchService(settings, recheck_seconds=0)
    pages = []
    try:
        with service.sessions() as session:
            html_rows = select(Document.doc_num, Document.url, Document.lang).where(
                Document.content_type.like("text/html%")
            )
            rows = session.execute(html_rows).all()
        for doc_num, url, lang in rows:
            body = service.pages.cached(int(doc_num)).body
            parsed = parse_html(body, url)
            site = next((name for origin, name in sites.items() if url.startswith(origin)), "other")
            text = f"{parsed.title} {parsed.text} {parsed.description} {parsed.keywords}"
            visible = visible_words(decode_body(body, None).text)
            lang = lang or "en"
            text_terms, nav_terms = set(analyze(text, lang)), set(analyze(parsed.nav, lang))
            pages.append(Page(int(doc_num), url, site, lang, visible, text_terms, nav_terms))
    finally:
        service.close()
    return pages


def queries(pages: list[Page], max_df: int, per_page: int, seed: int) -> list[Query]:
    """Per page, a seeded sample of ``per_page`` (0: all) of its distinctive words (in at
    most ``max_df`` pages) and as many of the words it shows only in its navigation text
    (any df); only words that are one query term for the page's analyzer."""
    from services.text.analysis.analyze import analyze

    df: Counter[str] = Counter(w for p in pages for w in p.words)
    rng = random.Random(seed)

    def sample(words: list[str]) -> list[str]:
        return sorted(rng.sample(words, per_page)) if per_page and len(words) > per_page else words

    asked = []
    for page in pages:
        terms = {w: t[0] for w in sorted(page.words) if len(t := analyze(w, page.lang)) == 1}
        rare = sample([w for w in terms if df[w] <= max_df])
        nav_only = [t for t in terms.values() if t in page.nav_terms and t not in page.text_terms]
        nav = sample([w for w, t in terms.items() if t in nav_only and w not in rare])
        asked += [Query(page, w, terms[w], df[w]) for w in sorted({*rare, *nav})]
    return asked


def measure(settings: Any, asked: list[Query], label: str) -> float:
    """Search each word alone on the active index and note its page's rank (the near-duplicate
    it is folded into stands for it). Returns the seconds taken."""
    from services.search.service import SearchService

    service = SearchService(settings, recheck_seconds=0)
    started = time.perf_counter()
    try:
        index = service.index()
        if index is None:
            raise SystemExit("word_recall: no active index")
        folded = np.asarray(index.arrays["near_dup_of"])
        for q in asked:
            ranked = [doc for doc, _ in service.ranked(q.word, MAX_RANK)]
            wanted = {q.page.doc_num, int(folded[q.page.doc_num])}
            q.ranks[label] = next((i + 1 for i, doc in enumerate(ranked) if doc in wanted), None)
    finally:
        service.close()
    return time.perf_counter() - started


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%} ({part})" if whole else "-"


def found(qs: list[Query], label: str, depth: int) -> int:
    return sum(1 for q in qs if (r := q.ranks.get(label)) is not None and r <= depth)


def distinctive_rows(asked: list[Query], max_df: int, depth: int) -> list[list[str]]:
    """Recall of distinctive words by site and by where the page holds them."""
    rare = [q for q in asked if q.df <= max_df]
    out = []
    for site in [*sorted({q.page.site for q in rare}), "all"]:
        for where in ("all words", "text", "nav only", "neither"):
            qs = [q for q in rare if site in ("all", q.page.site) and where in ("all words", q.place)]
            if qs:
                before, after = found(qs, "before", depth), found(qs, "after", depth)
                out.append([site, where, str(len(qs)), share(before, len(qs)), share(after, len(qs))])
    return out


def nav_rows(asked: list[Query], depth: int) -> list[list[str]]:
    """Words a page shows only in its navigation text, any df: in the first ``depth``
    results, and in the results at all."""
    nav = [q for q in asked if q.place == "nav only"]
    out = []
    for site in [*sorted({q.page.site for q in nav}), "all"]:
        qs = [q for q in nav if site in ("all", q.page.site)]
        if qs:
            n = len(qs)
            out.append(
                [
                    site,
                    str(n),
                    share(found(qs, "before", depth), n),
                    share(found(qs, "after", depth), n),
                    share(found(qs, "before", MAX_RANK), n),
                    share(found(qs, "after", MAX_RANK), n),
                ]
            )
    return out


def run(state: Path, per_page: int, max_df: int, seed: int) -> tuple[list[Query], dict[str, Any]]:
    """Crawl and index the sample web in ``state`` (emptied first), then search both indexes."""
    from services.config import Settings
    from services.demo.run import demo_settings, prepare
    from services.demo.sampleweb import SiteServer
    from services.indexing.publish import publish_segment
    from services.storage.blobs.blobstore import open_blobstore
    from services.storage.formats.segment import open_segment
    from services.storage.formats.segment_codec import expand_segment
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.index_versions import active_index

    shutil.rmtree(state, ignore_errors=True)
    settings = demo_settings(Settings.from_env({}), state).with_overrides(mr_runner="inline")
    servers: list[SiteServer] = []
    try:
        prepared = prepare(settings, DATA, progress=False, keep_serving=servers)
    finally:
        for server in servers:
            server.stop()
    pages = read_pages(settings, {s.origin + "/": s.site.name for s in servers})
    asked = queries(pages, max_df, per_page, seed)
    facts: dict[str, Any] = {"crawl_s": prepared.seconds["crawl"], "index_s": prepared.seconds["index"]}
    facts.update(pages=len(pages), after_s=measure(settings, asked, "after"))
    engine = make_engine(settings.database_url)
    try:
        sessions = session_factory(engine)
        with sessions() as session:
            active = active_index(session)
            if active is None:
                raise SystemExit("word_recall: the build published no index")
            name = active.segment
        store = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
        arrays, meta = open_segment(store.download(name, state / "after.nseg"))
        before = without_nav(expand_segment(arrays))
        publish_segment(before, {**meta, "created_at": time.time()}, store, sessions)
    finally:
        engine.dispose()
    facts["before_s"] = measure(settings, asked, "before")
    return asked, facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--state", type=Path, default=ROOT / "var" / "bench" / "word-recall")
    parser.add_argument("--per-page", type=int, default=40, help="words of each kind asked a page (0: all)")
    parser.add_argument("--max-df", type=int, default=3, help="distinctive: in at most this many pages")
    parser.add_argument("--depth", type=int, default=10, help="found: the page is in this many first results")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--misses", type=int, default=8, help="distinctive words still missed, listed")
    args = parser.parse_args(argv)
    asked, facts = run(args.state, args.per_page, args.max_df, args.seed)
    rare = sum(1 for q in asked if q.df <= args.max_df)
    print(
        f"word recall on the sample web ({facts['pages']} HTML pages): each word searched alone, "
        f"found = its page in the first {args.depth} results; before = no nav field, after = nav 0.25"
    )
    print(
        f"\n{rare} distinctive words (in <= {args.max_df} pages, as a reader sees them; "
        f"<= {args.per_page or 'all'} a page, seed {args.seed})"
    )
    headers = ["site", "the page holds it in", "words", "before", "after"]
    print("\n".join(format_table(headers, distinctive_rows(asked, args.max_df, args.depth))))
    nav = nav_rows(asked, args.depth)
    if nav:
        print("\nwords a page shows only in its navigation (menus, link lists, forms), any df")
        headers = ["site", "words", f"before top {args.depth}", f"after top {args.depth}"]
        headers += ["before, in the results", "after, in the results"]
        print("\n".join(format_table(headers, nav)))
    print(
        f"\ncrawl {facts['crawl_s']:.1f} s, index {facts['index_s']:.1f} s; {len(asked)} searches: "
        f"after {facts['after_s']:.1f} s, before {facts['before_s']:.1f} s"
    )
    missed = [q for q in asked if q.df <= args.max_df and not found([q], "after", args.depth)]
    if missed and args.misses:
        shown = ", ".join(
            f"{q.word} (/{q.page.url.split('/', 3)[-1]}: {q.ranks['after']})" for q in missed[: args.misses]
        )
        print(f"distinctive words missed after: {len(missed)}; the first {args.misses} (page: rank): {shown}")
        for where in ("text", "nav only", "neither"):
            ranks = [q.ranks["after"] for q in missed if q.place == where]
            ranked = [r for r in ranks if r is not None]
            if ranks:
                span = f", ranked {min(ranked)} to {max(ranked)}" if ranked else ""
                print(f"  in {where}: {len(ranks)}{span}, {len(ranks) - len(ranked)} not in the results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
