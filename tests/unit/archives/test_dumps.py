"""Dumps and collections through plan_batches/read_batch: the sample MediaWiki dump and Cranfield,
and a wiki without <siteinfo>, a multistream dump with its index, an ODP RDF sample, text records
and SQL rows built here."""

from __future__ import annotations

import bz2
import gzip
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import Bundle
from services.archives.records import ArchiveRecord, count
from tests.unit.archives.builders import make_bundle
from tests.unit.archives.test_bad_input import wiki_page

WIKI = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
# What wikitext leaves when it is read carelessly: templates, tables, files, categories.
LEFTOVERS = re.compile(
    r"\[\[|\]\]|\{\{|\}\}|\{\||\|\}|thumb\||File:|Category:|<ref|&nbsp;|''|\(\s*[;,]?\s*\)|\(; "
)


def read_all(bundle: Bundle, batch_size: int | None = None) -> list[ArchiveRecord]:
    return [r for b in plan_batches(bundle, batch_size) for r in read_batch(bundle, b)]


@pytest.fixture(scope="module")
def wiki_records(tmp_path_factory: pytest.TempPathFactory) -> list[ArchiveRecord]:
    data = Path(__file__).resolve().parents[3] / "data" / WIKI
    bundle = make_bundle(
        tmp_path_factory.mktemp("wiki"),
        'type = "mediawiki"\ndescription = "enwiki"\n',
        {"dump.xml.bz2": data},
    )
    return read_all(bundle, batch_size=40)


def test_the_sample_dump_gives_its_articles_and_redirects_as_aliases(
    wiki_records: list[ArchiveRecord],
) -> None:
    counts = count(wiki_records)
    assert counts["document"] == 106 and counts["alias"] == 99 and counts["skipped.namespace"] == 1
    docs = {r.url: r.document for r in wiki_records if r.document}
    anarchism = docs["https://en.wikipedia.org/wiki/Anarchism"]
    assert anarchism is not None and anarchism.title == "Anarchism" and anarchism.language == "en"
    assert anarchism.text.startswith("Anarchism is a political philosophy")
    links = dict(anarchism.links)
    assert links["https://en.wikipedia.org/wiki/Political_philosophy"] == "political philosophy"
    alias = next(r for r in wiki_records if r.url == "https://en.wikipedia.org/wiki/AccessibleComputing")
    assert (
        alias.redirect_to == "https://en.wikipedia.org/wiki/Computer_accessibility" and alias.document is None
    )
    assert alias.title == "AccessibleComputing"  # the redirect's own title: its target's anchor text
    assert all(r.fetched_at > 1_000_000_000 for r in wiki_records)  # revision timestamps


def test_no_markup_leaks_into_any_article(wiki_records: list[ArchiveRecord]) -> None:
    leaks = {}
    for record in wiki_records:
        if record.document and (found := LEFTOVERS.search(record.document.text)):
            text = record.document.text
            leaks[record.document.title] = text[max(0, found.start() - 40) : found.end() + 40]
    assert not leaks, leaks
    andorra = next(r.document for r in wiki_records if r.document and r.document.title == "Andorra")
    assert andorra.text.startswith("Andorra, officially the Principality of Andorra")  # not "Andorra (; , ),"


def test_a_dump_without_siteinfo_with_revisions_and_the_bundles_language(tmp_path: Path) -> None:
    old = "<revision><timestamp>2001-01-01T00:00:00Z</timestamp><text>Alte Fassung</text></revision>"
    dump = (
        b"<mediawiki>\n"
        + wiki_page("Köln", "Köln liegt am [[Rhein|Fluss]]. [[Datei:Dom.jpg|mini|Dom]]", extra=old)
        + wiki_page("Rhein", "Ein [[Strom]] in [[Kategorie:Fluss]] Europa.")
        + b"</mediawiki>"
    )  # fmt: skip
    toml = 'type = "mediawiki"\ndescription = "x"\nlanguage = "de"\nurl_template = "https://de.example.org/w/{title}"\n'
    bundle = make_bundle(tmp_path / "b", toml, {"d.xml": dump})
    docs = {r.document.title: r for r in read_all(bundle) if r.document}
    koeln = docs["Köln"]
    assert koeln.url == "https://de.example.org/w/K%C3%B6ln" and koeln.document.language == "de"  # type: ignore[union-attr]
    assert koeln.fetched_at == 1577836800.0  # the newest revision (2020), not the 2001 one
    assert koeln.document.text == "Köln liegt am Fluss."  # type: ignore[union-attr]
    assert koeln.document.links == [("https://de.example.org/w/Rhein", "Fluss")]  # type: ignore[union-attr]


def test_a_multistream_dump_is_cut_at_the_streams_its_index_lists(tmp_path: Path, sample_data: Path) -> None:
    """Wikipedia's multistream layout, built from the sample's first 60 pages: a head stream,
    then 20 pages a stream (Wikipedia's have 100)."""
    raw = bz2.decompress((sample_data / WIKI).read_bytes())
    first = raw.find(b"<page>")
    pages = re.findall(rb"\s*<page>.*?</page>\n", raw[first:], re.S)[:60]
    streams, index, offset = [bz2.compress(raw[:first])], [], 0
    offset = len(streams[0])
    for i in range(0, len(pages), 20):
        group = b"".join(pages[i : i + 20]) + (b"</mediawiki>\n" if i + 20 >= len(pages) else b"")
        index += [f"{offset}:{10 + i + j}:Title {i + j}" for j in range(len(pages[i : i + 20]))]
        streams.append(bz2.compress(group))
        offset += len(streams[-1])
    files = {
        "enwiki-multistream.xml.bz2": b"".join(streams),
        "enwiki-multistream-index.txt.bz2": bz2.compress("\n".join(index).encode()),
    }
    bundle = make_bundle(tmp_path / "b", 'type = "mediawiki"\ndescription = "x"\n', files)
    assert bundle.files == ["enwiki-multistream.xml.bz2"] and bundle.indexes
    batches = plan_batches(bundle, batch_size=20)
    assert [b.start for b in batches] == [len(b"".join(streams[:k])) for k in range(1, len(streams))]
    records = [r for b in batches for r in read_batch(bundle, b)]
    single = [r for r in read_all(make_bundle(tmp_path / "one", 'type = "mediawiki"\ndescription = "x"\n',
              {"one.xml.bz2": bz2.compress(raw[:first] + b"".join(pages) + b"</mediawiki>")}))]  # fmt: skip
    assert [(r.url, r.kind) for r in records] == [(r.url, r.kind) for r in single]
    assert count(records)["document"] >= 4 and count(records)["alias"] >= 40
    assert {r.offset for r in records} == {b.start for b in batches}  # each page points at its stream


def test_odp_topics_link_their_sites_with_their_titles(tmp_path: Path) -> None:
    rdf = """<?xml version="1.0" encoding="UTF-8"?>
<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" xmlns="http://dmoz.org/rdf/">
  <Topic r:id="Top/Arts/Movies">
    <catid>4</catid>
    <d:Title>Movies</d:Title>
    <lastUpdate>2016-03-01 10:00:00</lastUpdate>
    <narrow r:resource="Top/Arts/Movies/Genres"/>
    <symbolic r:resource="Film Festivals:Top/Arts/Movies/Festivals"/>
    <related r:resource="Top/Arts/Television"/>
    <link r:resource="http://www.imdb.com/"/>
    <link r:resource="http://www.filmsite.org/"/>
  </Topic>
  <ExternalPage about="http://www.imdb.com/">
    <d:Title>Internet Movie Database</d:Title>
    <d:Description>Films, actors &amp; crews.</d:Description>
    <topic>Top/Arts/Movies</topic>
  </ExternalPage>
  <ExternalPage about="http://www.filmsite.org/">
    <d:Title>Filmsite</d:Title>
    <d:Description>Classic films reviewed.</d:Description>
    <topic>Top/Arts/Movies</topic>
  </ExternalPage>
  <Topic r:id="Top/Arts/Movies/Genres">
    <catid>5</catid>
    <link r:resource="http://www.horror.test/"/>
  </Topic>
  <ExternalPage about="http://www.horror.test/">
    <d:Title>Horror</d:Title>
    <d:Description>Scary.</d:Description>
    <topic>Top/Arts/Movies/Genres</topic>
  </ExternalPage>
</RDF>
"""
    bundle = make_bundle(
        tmp_path / "b", 'type = "odp"\ndescription = "dmoz"\n', {"content.rdf.u8": rdf.encode()}
    )
    batches = plan_batches(bundle, batch_size=1)
    assert len(batches) == 2  # one topic a batch, its sites with it
    records = {r.url: r for b in batches for r in read_batch(bundle, b)}
    movies = records["http://www.dmoz.org/Arts/Movies/"].document
    assert movies is not None and movies.title == "Movies"
    assert movies.links == [
        ("http://www.imdb.com/", "Internet Movie Database"),
        ("http://www.filmsite.org/", "Filmsite"),
        ("http://www.dmoz.org/Arts/Movies/Genres/", "Genres"),
        ("http://www.dmoz.org/Arts/Movies/Festivals/", "Film Festivals"),
        ("http://www.dmoz.org/Arts/Television/", "Television"),
    ]
    assert "Internet Movie Database: Films, actors & crews." in movies.text
    imdb = records["http://www.imdb.com/"].document
    assert imdb is not None and (imdb.title, imdb.text) == (
        "Internet Movie Database",
        "Films, actors & crews.",
    )
    assert records["http://www.dmoz.org/Arts/Movies/Genres/"].document.links == [
        ("http://www.horror.test/", "Horror")
    ]  # type: ignore[union-attr]


def test_cranfield_as_json_lines(tmp_path: Path, sample_data: Path) -> None:
    bundle = make_bundle(
        tmp_path / "cranfield", 'type = "jsonl"\ndescription = "Cranfield"\nlanguage = "en"\n',
        {"docs.jsonl": sample_data / "ir/cranfield/docs.jsonl"},
    )  # fmt: skip
    records = read_all(bundle, batch_size=300)
    assert count(records) == Counter({"document": 1398, "skipped.empty": 2})  # 471 and 995 are empty
    first = records[0]
    assert first.url == "https://cranfield.collection.invalid/doc/1" and first.document is not None
    assert first.document.title.startswith("experimental investigation of the aerodynamics")
    assert first.document.source_id == "1"  # what a TREC run names it by
    assert len({r.url for r in records}) == 1400


def test_a_judged_collection_keeps_its_empty_documents(sample_data: Path) -> None:
    """`nimbus eval` reads with keep_empty: each document of a judged collection is judged."""
    from services.archives.batch import TO_END
    from services.archives.formats.jsonl import read_jsonl

    with (sample_data / "ir/cranfield/docs.jsonl").open("rb") as fh:
        records = list(read_jsonl(fh, "docs.jsonl", 0, TO_END, collection="cranfield", cap=10**6,
                                  fetched_at=0.0, keep_empty=True))  # fmt: skip
    assert count(records) == Counter({"document": 1400})
    empty = [r.document for r in records if r.document and not r.document.text]
    assert [d.source_id for d in empty] == ["471", "995"]


@pytest.mark.parametrize("codec", ["plain", "gzip", "bz2"])
def test_a_mail_folder_cut_by_start_pattern(tmp_path: Path, codec: str) -> None:
    mails = "".join(
        f"From alice{i}@example.org Mon Jan  {i + 1} 10:00:00 2024\n"
        f"Subject: Meeting {i}\n\nBody of mail {i}.\n\n"
        for i in range(7)
    ).encode()
    data = {"plain": mails, "gzip": gzip.compress(mails), "bz2": bz2.compress(mails)}[codec]
    toml = (
        'type = "text"\ndescription = "mail"\nstart = "^From (?P<sender>\\\\S+) "\ntitle = "^Subject: (.*)"\n'
        'url_template = "https://lists.example.org/{sender}/{offset}"\n'
    )
    bundle = make_bundle(tmp_path / "mail", toml, {"inbox.mbox": data})
    records = read_all(bundle, batch_size=3)
    assert [r.document.title for r in records if r.document] == [f"Meeting {i}" for i in range(7)]
    assert (
        records[2].url == f"https://lists.example.org/alice2%40example.org/{records[2].offset}"
        and "Body of mail 2." in records[2].document.text
    )  # type: ignore[union-attr]


def test_a_log_one_record_a_line(tmp_path: Path) -> None:
    log = b"".join(b"2024-01-01T00:00:%02d GET /page/%d 200\n" % (i, i) for i in range(10))
    bundle = make_bundle(
        tmp_path / "logs", 'type = "text"\ndescription = "access log"\n', {"access.log": log}
    )
    records = read_all(bundle, batch_size=4)
    assert (
        len(records) == 10
        and records[3].url
        == f"https://logs.collection.invalid/access.log/{log.index(b'2024-01-01T00:00:03')}"
    )


def test_sql_rows_on_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "wiki.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        conn.executemany(
            "INSERT INTO notes VALUES (?, ?, ?)",
            [(i, f"Note {i}", f"text {i}" if i != 5 else "") for i in range(1, 12)],
        )
    monkeypatch.setenv("NOTES_DB", f"sqlite:///{db}")
    toml = (
        'type = "sql"\ndescription = "notes"\nquery = "SELECT id, title, body FROM notes"\n'
        'database_url_env = "NOTES_DB"\ntitle_column = "title"\ntext_column = "body"\n'
        'url_template = "https://notes.test/n/{id}"\n'
    )
    bundle = make_bundle(tmp_path / "notes", toml)
    batches = plan_batches(bundle, batch_size=4)
    assert [(b.seek_state["from"], b.seek_state["to"]) for b in batches] == [(1, 5), (5, 9), (9, None)]
    records = [r for b in batches for r in read_batch(bundle, b)]
    assert [r.url for r in records][:2] == ["https://notes.test/n/1", "https://notes.test/n/2"]
    assert len(records) == 11 and records[4].document.title == "Note 5" and records[4].document.text == ""  # type: ignore[union-attr]


def test_every_batch_cut_reads_what_one_batch_reads(tmp_path: Path, sample_data: Path) -> None:
    """Records starting in [start, end): cutting a file anywhere loses and repeats nothing."""
    bundle = make_bundle(
        tmp_path / "b",
        'type = "warc"\ndescription = "x"\n',
        {"iana.warc.gz": sample_data / "warc/iana.warc.gz"},
    )
    whole = [(r.offset, r.kind) for r in read_all(bundle, batch_size=10_000)]
    for size in (1, 7, 100):
        assert [(r.offset, r.kind) for r in read_all(bundle, batch_size=size)] == whole
