"""Navigational queries on the repository's real sites: is the page a query names found first?

    .venv/bin/python -m benchmarks.navigational [--setup archive sampleweb] [--weights 0 1]

The queries are ``data/ir/navigational/queries.jsonl`` (made by
``scripts/make_navigational_queries.py`` from the web archives and the wiki dump; its rules
are in that script and data/README.md): each names one page, a home page (by its host's
name or its title), a section's entry page (by its path's words or its title) or any other
page (by its title). Two setups index the same pages:

* ``archive``: the archives crawled as ``nimbus archive crawl`` stores them (the WARC and
  ARC files as one bundle, the wiki dump as another), with their real URLs and hosts
  (www.iana.org, example.com, en.wikipedia.org);
* ``sampleweb``: the demo's sample web crawled over loopback by the real crawler (the IANA
  pages and the wiki articles on two 127.0.0.1 ports: host names say nothing there), the
  answers mapped to their loopback URLs (example.com is not served: its queries drop out).

Each is indexed once (``nimbus index``'s build) and searched by ``SearchService.ranked``
with each ``NIMBUS_ENTRY_PAGE_WEIGHT`` given (0: the ranking before entry pages). Per kind
of query: MRR (the answer's reciprocal rank, 0 beyond ``--depth``), success@1 and @10.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import select

from services.config import Settings
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl
from services.storage.sql.schema import init_db

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
QUERIES = DATA / "ir" / "navigational" / "queries.jsonl"
WEB_ARCHIVES = ("warc/iana.warc.gz", "warc/example.arc.gz", "warc/example-iana.org-chunked.warc")
WIKI_DUMP = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
GROUPS = {"home": "home pages", "section": "section pages", "named page": "named pages"}


@dataclass(frozen=True)
class NavQuery:
    id: str
    text: str
    url: str
    kind: str

    @property
    def group(self) -> str:
        return GROUPS[self.kind.split(":")[0]]


def load_queries(path: Path = QUERIES) -> list[NavQuery]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [NavQuery(r["id"], r["text"], r["url"], r["kind"]) for r in rows]


def measures(ranks: Iterable[int | None]) -> dict[str, float]:
    """MRR, success@1 and success@10 of 1-based ranks (None: not found within the depth)."""
    ranks = list(ranks)
    if not ranks:
        return {"queries": 0, "MRR": 0.0, "S@1": 0.0, "S@10": 0.0}
    n = len(ranks)
    return {
        "queries": n,
        "MRR": sum(1.0 / r for r in ranks if r) / n,
        "S@1": sum(1 for r in ranks if r == 1) / n,
        "S@10": sum(1 for r in ranks if r and r <= 10) / n,
    }


def state_settings(state: Path) -> Settings:
    return Settings.from_env().with_overrides(
        database_url=f"sqlite:///{state / 'nimbus.db'}",
        blob_url=f"file://{state / 'blobs'}",
        var_dir=state / "var",
        crawl_delay=0.0,
    )


def _bundle(folder: Path, toml: str, files: Iterable[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.toml").write_text(toml, encoding="utf-8")
    for name in files:
        link = folder / Path(name).name
        if not link.exists():
            os.symlink(DATA / name, link)
    return folder


def setup_archive(state: Path) -> tuple[Settings, dict[str, str]]:
    """Archive-crawl the web archives and the wiki dump, build the index; URLs map to themselves."""
    from services.crawler.archive.register import register_bundle
    from services.crawler.crawl import run_crawl
    from services.indexing.build import build_index

    settings = state_settings(state)
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        sessions = session_factory(engine)
        web = _bundle(
            state / "bundles" / "web", 'type = "warc"\ndescription = "sample web archives"\n', WEB_ARCHIVES
        )
        wiki = _bundle(
            state / "bundles" / "wiki", 'type = "mediawiki"\ndescription = "enwiki sample"\n', [WIKI_DUMP]
        )
        for folder in (web, wiki):
            register_bundle(sessions, str(folder), now=time.time())
    finally:
        engine.dispose()
    run_crawl(settings, [], progress=False, web=False, archives=True, identity="bench/archive")
    build_index(settings, progress=False)
    return settings, {}


def setup_sampleweb(state: Path) -> tuple[Settings, dict[str, str]]:
    """Crawl the demo's sample web over loopback and build the index; archive hosts map to the
    loopback origins that serve their pages."""
    from services.demo.run import demo_settings, prepare
    from services.demo.sampleweb import SiteServer

    settings = demo_settings(Settings.from_env(), state)
    servers: list[SiteServer] = []
    try:
        prepare(settings, DATA, progress=False, keep_serving=servers)
    finally:
        for server in servers:
            server.stop()
    origins = {s.site.name: s.origin for s in servers}
    return settings, {"www.iana.org": origins["iana"], "en.wikipedia.org": origins["wiki"]}


def answer_url(url: str, hosts: dict[str, str]) -> str | None:
    """The URL the answer has in a setup: itself, or its path on the origin serving its host."""
    if not hosts:
        return url
    parts = urlsplit(url)
    origin = hosts.get(parts.hostname or "")
    return None if origin is None else origin + (parts.path or "/")


def doc_urls(settings: Settings) -> tuple[dict[int, str], dict[str, int]]:
    """(doc_num -> URL, every stored URL and duplicate URL -> doc_num)."""
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as session:
            urls = {int(n): u for n, u in session.execute(select(Document.doc_num, Document.url))}
            names = {u: n for n, u in urls.items()}
            names.update(
                {u: int(n) for n, u in session.execute(select(DuplicateUrl.doc_num, DuplicateUrl.url))}
            )
    finally:
        engine.dispose()
    return urls, names


def run(
    settings: Settings, hosts: dict[str, str], queries: list[NavQuery], weight: float, depth: int
) -> dict:
    """Each query's rank of its answer (None beyond ``depth``), by query id."""
    from services.search.service import SearchService

    _urls, names = doc_urls(settings)
    service = SearchService(settings.with_overrides(entry_page_weight=weight))
    ranks: dict[str, int | None] = {}
    try:
        for q in queries:
            url = answer_url(q.url, hosts)
            target = names.get(url) if url else None
            if url is None:
                continue  # not served in this setup
            if target is None:  # the "http" capture stored under its "https" twin, or the like
                target = names.get(url.replace("http://", "https://", 1)) or names.get(
                    url.replace("https://", "http://", 1)
                )
            ranked = [doc for doc, _ in service.ranked(q.text, depth, operators=False)]
            ranks[q.id] = ranked.index(target) + 1 if target in ranked else None
    finally:
        service.close()
    return ranks


def report(queries: list[NavQuery], ranks: dict[str, int | None]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for group in [*GROUPS.values(), "entry pages (home + section)", "all"]:
        chosen = [
            q
            for q in queries
            if q.id in ranks
            and (
                group == "all"
                or q.group == group
                or (group.startswith("entry") and q.group in {"home pages", "section pages"})
            )
        ]
        out[group] = measures(ranks[q.id] for q in chosen)
    return out


def _worse(rank: int | None, than: int | None) -> bool:
    """Whether ``rank`` is a worse place than ``than`` (None: not found)."""
    if rank == than:
        return False
    return rank is None or (than is not None and rank > than)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--setup", nargs="+", default=["archive", "sampleweb"], choices=["archive", "sampleweb"]
    )
    parser.add_argument(
        "--weights", nargs="+", type=float, default=[0.0, 1.0], help="NIMBUS_ENTRY_PAGE_WEIGHT values"
    )
    parser.add_argument("--depth", type=int, default=100, help="results read per query")
    parser.add_argument("--verbose", action="store_true", help="each entry-page query's rank")
    args = parser.parse_args(argv)
    queries = load_queries()
    for setup in args.setup:
        with tempfile.TemporaryDirectory(prefix=f"nav-{setup}-") as tmp:
            started = time.monotonic()
            settings, hosts = (setup_archive if setup == "archive" else setup_sampleweb)(Path(tmp))
            print(f"## {setup} (crawled and indexed in {time.monotonic() - started:.0f} s)")
            print("| weight | queries | MRR | S@1 | S@10 |")
            by_weight = {w: run(settings, hosts, queries, w, args.depth) for w in args.weights}
            for group in report(queries, next(iter(by_weight.values()))):
                print(f"| **{group}** | | | | |")
                for w, ranks in by_weight.items():
                    m = report(queries, ranks)[group]
                    print(f"| {w:g} | {m['queries']} | {m['MRR']:.3f} | {m['S@1']:.3f} | {m['S@10']:.3f} |")
            base = by_weight[args.weights[0]]
            for w, ranks in list(by_weight.items())[1:]:
                worse = [q.id for q in queries if q.id in ranks and _worse(ranks[q.id], base[q.id])]
                better = [q.id for q in queries if q.id in ranks and _worse(base[q.id], ranks[q.id])]
                print(
                    f"weight {w:g} against {args.weights[0]:g}: {len(better)} queries ranked their answer "
                    f"higher, {len(worse)} lower {worse}"
                )
            if args.verbose:
                for q in queries:
                    if q.group != "named pages" and q.id in by_weight[args.weights[0]]:
                        line = " ".join(f"{w:g}:{by_weight[w][q.id]}" for w in args.weights)
                        print(f"  {q.kind:18} {q.text!r:58} {line}")
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
