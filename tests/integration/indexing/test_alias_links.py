"""Aliases count where a search engine uses redirects: on the sample MediaWiki dump,
archive-crawled and indexed, a redirect's title finds its target article (as anchor text
of the target) and links through a redirect are in-links of the target in the link graph
and PageRank; a link to a duplicate URL counts for the document holding its bytes."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest
from sqlalchemy import select

from services.cli import main
from services.config import Settings
from services.indexing.build import build_index
from services.search.service import SearchService
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, UrlAlias
from tests.integration.crawler.archive_bundles import WIKI, bundle

WIKI_TOML = 'type = "mediawiki"\ndescription = "{}"\n'
AYN_RAND = "https://en.wikipedia.org/wiki/Ayn_Rand"
ANOVA = "https://en.wikipedia.org/wiki/Analysis_of_variance"
READING = "https://en.wikipedia.org/wiki/Objectivist_reading_list"
# A second dump of the same wiki (the sample's <siteinfo>, so the same URLs): one article that
# links to two articles of the sample only through their redirects.
LINKING_DUMP = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <case>first-letter</case>
    <namespaces><namespace key="0" case="first-letter" /></namespaces>
  </siteinfo>
  <page>
    <title>Objectivist reading list</title>
    <ns>0</ns>
    <id>900001</id>
    <revision>
      <id>900002</id>
      <timestamp>2016-04-01T00:00:00Z</timestamp>
      <text xml:space="preserve">Readers start with [[AynRand|the philosopher of selfishness]] and
her novels, then test what they learned with [[ANOVA]] on a survey of readers.</text>
    </revision>
  </page>
</mediawiki>
"""


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("NIMBUS_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("NIMBUS_BLOB_URL", settings.blob_url)
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(settings.var_dir))
    return settings


def _doc_nums(settings: Settings) -> dict[str, int]:
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine)() as s:
            return {d.url: d.doc_num for d in s.scalars(select(Document))}
    finally:
        engine.dispose()


def _top(service: SearchService, query: str) -> list[int]:
    return [doc for doc, _score in service.ranked(query, 5, operators=False)]


def test_a_redirects_title_finds_its_target_and_links_through_redirects_are_in_links(
    env: Settings, tmp_path: Path, sample_data: Path
) -> None:
    wiki = bundle(
        tmp_path / "enwiki", WIKI_TOML.format("enwiki sample"), {"wiki.xml.bz2": sample_data / WIKI}
    )
    assert main(["archive", "crawl", str(wiki), "--quiet"]) == 0
    engine = make_engine(env.database_url)
    with session_factory(engine)() as s:
        titles = {a.url: a.title for a in s.scalars(select(UrlAlias))}
    engine.dispose()
    assert titles["https://en.wikipedia.org/wiki/AynRand"] == "AynRand"  # the redirect's own title

    build_index(env, progress=False)
    nums = _doc_nums(env)
    service = SearchService(env)
    try:
        # "AynRand" is nowhere in the article: only its redirect's title names it so.
        assert _top(service, "aynrand") == [nums[AYN_RAND]]
        before = service.holder.current()
        assert before is not None
        rand_in, anova_in = (set(before.in_links(nums[u]).tolist()) for u in (AYN_RAND, ANOVA))
    finally:
        service.close()

    extra = bundle(
        tmp_path / "enwiki-extra",
        WIKI_TOML.format("one more article"),
        {"extra.xml.bz2": bz2.compress(LINKING_DUMP.encode())},
    )
    assert main(["archive", "crawl", str(extra), "--quiet"]) == 0
    build_index(env, progress=False)
    nums = _doc_nums(env)
    service = SearchService(env)
    try:
        index = service.holder.current()
        assert index is not None
        reading = nums[READING]
        # Both links name redirects, never the articles' own URLs: each counts for its target.
        assert set(index.in_links(nums[AYN_RAND]).tolist()) == rand_in | {reading}
        assert set(index.in_links(nums[ANOVA]).tolist()) == anova_in | {reading}
        assert index.out_count(reading) == 2
        # The link's anchor text is the target's, as for a link to its own URL.
        assert _top(service, "philosopher of selfishness")[0] == nums[AYN_RAND]
        info = service.pages.page_info(nums[AYN_RAND])
        assert any(
            link.url == READING and link.anchor == "the philosopher of selfishness" for link in info.in_links
        )
    finally:
        service.close()
