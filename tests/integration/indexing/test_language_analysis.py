"""Every language its own analysis, end to end: a loopback site of pages in six languages is
crawled (CLD2 names each page's language), indexed by the MapReduce build and searched
through the search service; an inflected form of a page's word finds the page."""

from __future__ import annotations

import pytest

from services.config import Settings
from services.crawler.crawl import run_crawl
from services.indexing.build import build_index
from services.search.service import SearchService
from services.text.analysis.analyze import analyzer_version
from tests.integration.crawler import badweb
from tests.integration.crawler.badweb import BadWeb

# path -> (declared language, title, text). The text is long enough for CLD2 to be sure.
PAGES = {
    "/de.html": (
        "de",
        "Altstadt",
        "Die alten Häuser der Altstadt stehen dicht am Ufer des Flusses. Viele Familien wohnten "
        "seit Jahrhunderten in diesen Gebäuden, und die schmalen Gassen führen zu den Brücken.",
    ),
    "/fr.html": (
        "fr",
        "Vie locale",
        "Les élections municipales ont eu lieu dimanche dans toutes les communes du département. "
        "Les électeurs ont choisi leurs conseillers, et l'avion du ministre est arrivé le soir.",
    ),
    "/es.html": (
        "es",
        "Música",
        "Las canciones tradicionales de los pueblos del norte se cantan en todas las fiestas. "
        "Los niños aprenden estas melodías de sus abuelos durante los largos inviernos.",
    ),
    "/ru.html": (
        "ru",
        "Библиотека",
        "Старые книги лежат на полках городской библиотеки. Читатели приходят каждый день, "
        "чтобы взять новые журналы и прочитать газеты о событиях в стране.",
    ),
    "/it.html": (
        "it",
        "Biblioteca",
        "Le biblioteche della città conservano migliaia di libri antichi e manoscritti preziosi. "
        "Gli studenti dell'università vengono ogni giorno a leggere e a studiare in silenzio.",
    ),
    "/th.html": (
        "th",
        "ภาษาไทย",
        "ภาษาไทยเป็นภาษาที่สวยงามและมีประวัติศาสตร์ยาวนาน คนไทยใช้ภาษานี้ในชีวิตประจำวัน และนักเรียนเรียนภาษาไทยที่โรงเรียนทุกวัน",
    ),
    "/en.html": (
        "en",
        "Gardens",
        "The gardens behind the houses are full of roses in summer. Gardeners water the flowers "
        "every evening and the neighbours come to admire them.",
    ),
}
META_PAGE = (
    "<html lang=de><head><title>Rathaus</title>"
    '<meta name="description" content="Das historische Rathaus am Marktplatz">'
    '<meta name="keywords" content="Fachwerk, Denkmalschutz, Stadtführungen"></head>'
    "<body><p>Das Rathaus wurde im Mittelalter gebaut und mehrmals erweitert. Heute arbeiten "
    "dort die Beamten der Stadtverwaltung, und Besucher können den Saal besichtigen.</p></body></html>"
)

# (query, the page it must find first): inflected forms, accents left out, another case.
QUERIES = [
    ("Haus", "/de.html"),  # Häuser
    ("Gebäude", "/de.html"),  # Gebäuden
    ("Brücke", "/de.html"),  # Brücken
    ("élection", "/fr.html"),  # élections
    ("election", "/fr.html"),  # typed without its accent
    ("avions", "/fr.html"),  # l'avion: elision
    ("canción", "/es.html"),  # canciones
    ("cancion", "/es.html"),
    ("книга", "/ru.html"),  # книги
    ("библиотеке", "/ru.html"),  # библиотеки
    ("libro", "/it.html"),  # libri
    ("biblioteca", "/it.html"),  # biblioteche
    ("ประวัติศาสตร์", "/th.html"),  # a word inside an unspaced Thai sentence
    ("garden", "/en.html"),  # gardens: English as before
    ("Die alten Häuser der Altstadt am Fluss", "/de.html"),  # CLD2 is sure: German
    ("Denkmalschutz", "/rathaus.html"),  # only in <meta name=keywords>
    ("historischen Marktplatz", "/rathaus.html"),  # only in the description
]


def _page(lang: str, title: str, text: str) -> str:
    return f"<html lang={lang}><head><title>{title}</title></head><body><p>{text}</p></body></html>"


@pytest.fixture(scope="module")
def site_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, str]]:
    root = tmp_path_factory.mktemp("languages")
    settings = Settings.of(  # tests/conftest.py's settings, for the whole module
        database_url=f"sqlite:///{root / 'nimbus.db'}",
        blob_url=f"file://{root / 'blobs'}",
        mr_runner="inline",
        var_dir=root / "var",
        crawl_delay=0.0,
        allowed_hosts="127.0.0.1",
        soft404_probe=False,
        sitemaps=False,
        feedback_docs=0,
        languages="",  # store pages in every language (the crawl's default keeps English only)
    )
    routes = {path: badweb.page(_page(*spec)) for path, spec in PAGES.items()}
    # An English page links to the German one: the anchor text is analyzed in German, the
    # language of the page it describes.
    routes["/en.html"] = badweb.page(
        _page(*PAGES["/en.html"]).replace("</p>", '</p><a href="/de.html">Fachwerkhäuser</a>')
    )
    routes["/rathaus.html"] = badweb.page(META_PAGE)
    links = "".join(f'<a href="{path}">{path}</a> ' for path in [*PAGES, "/rathaus.html"])
    routes["/"] = badweb.page(f"<html><head><title>Index</title></head><body>{links}</body></html>")
    with BadWeb(routes) as web:
        run_crawl(settings, [web.url("/")], progress=False)
        urls = {path: web.url(path) for path in [*routes]}
    build_index(settings, progress=False)
    return settings, urls


def test_an_inflected_form_finds_the_page_in_each_language(
    site_index: tuple[Settings, dict[str, str]],
) -> None:
    settings, urls = site_index
    service = SearchService(settings, recheck_seconds=0)
    try:
        for query, path in QUERIES:
            hits = service.search(query).hits
            assert hits and hits[0].url == urls[path], (query, [h.url for h in hits])
        # The snippet shows the page's word, as the page's language analyzes it.
        marked = [f.text for f in service.search("Haus").hits[0].snippet if f.match]
        assert marked == ["Häuser"]
        marked = [f.text for f in service.search("election").hits[0].snippet if f.match]
        assert marked == ["élections"]
        # Only an in-link's anchor text names the German page so.
        assert [h.url for h in service.search("Fachwerkhaus").hits] == [urls["/de.html"]]
    finally:
        service.close()


def test_the_segment_names_its_analyzer_and_languages(site_index: tuple[Settings, dict[str, str]]) -> None:
    settings, _urls = site_index
    service = SearchService(settings, recheck_seconds=0)
    try:
        index = service.holder.current()
        assert index is not None
        meta = index.meta
    finally:
        service.close()
    assert meta["analyzer"] == analyzer_version()
    languages = meta["languages"]
    assert {k: languages.get(k) for k in ("fr", "es", "ru", "it", "plain")} == {
        "fr": 1,
        "es": 1,
        "ru": 1,
        "it": 1,
        "plain": 1,  # Thai: words cut by ICU, no stemmer
    }
    assert languages["de"] >= 2 and languages["en"] >= 1  # and the link list's, as CLD2 reads it
    assert sum(languages.values()) == len(PAGES) + 2
