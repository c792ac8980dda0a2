"""HTML extraction: title, text without scripts, links with anchors, charsets."""

from __future__ import annotations

import pytest

from services.text.extract.charset import decode_html
from services.text.extract.html import parse_html
from services.text.extract.titles import placeholder_title

PAGE = b"""<!doctype html><html lang="en-GB"><head>
<title>  IANA \xe2\x80\x94 Numbers </title>
<meta name="description" content="Number   resources">
<meta name="keywords" content="ip, asn">
<script>var hidden = "script text";</script><style>.x{color:red}</style>
</head><body><h1>Numbers</h1><p>IP addresses &amp; AS numbers.</p>
<a href="/about">About us</a> <a href="https://other.test/x#frag">Other</a>
<a href="mailto:a@b">mail</a> <a href="#top">top</a> <a href="javascript:void(0)">js</a>
<a rel="nofollow" href="/private">private</a>
</body></html>"""


def test_title_text_meta():
    page = parse_html(PAGE, "http://www.iana.test/numbers")
    assert page.title == "IANA — Numbers"
    assert page.description == "Number resources"
    assert page.keywords == "ip, asn"
    assert page.lang == "en-gb"
    assert "IP addresses & AS numbers." in page.text
    assert "script text" not in page.text and "color" not in page.text


def test_links_resolved_with_anchor_text_and_junk_skipped():
    page = parse_html(PAGE, "http://www.iana.test/numbers")
    assert page.links == [
        ("http://www.iana.test/about", "About us"),
        ("https://other.test/x#frag", "Other"),
    ]


def test_base_href_and_meta_robots():
    html = (
        b'<head><base href="http://cdn.test/d/">'
        b'<meta name="robots" content="noindex, nofollow"></head><a href="x">x</a>'
    )
    page = parse_html(html, "http://a.test/")
    assert page.noindex and page.nofollow and page.links == []
    page = parse_html(b'<head><base href="http://cdn.test/d/"></head><a href="x">x</a>', "http://a.test/")
    assert page.links == [("http://cdn.test/d/x", "x")]


def test_charsets_header_meta_and_mislabelled():
    latin = "café".encode("latin-1")
    assert decode_html(latin, "iso-8859-1") == "café"
    assert "café" in decode_html(b'<meta charset="windows-1252">' + latin)
    # Labelled utf-8 but really cp1252: decoded, not crashed.
    assert "café" in decode_html(b"<p>" + latin, "utf-8")
    assert decode_html(b"\xef\xbb\xbfhi") == "hi"


def test_malformed_and_empty_html_do_not_crash():
    assert parse_html(b"", "http://a.test/").text == ""
    page = parse_html(b"<html><title>t</title><body><p>unclosed <b>bold <a href='/x'>x", "http://a.test/")
    assert page.title == "t" and page.links == [("http://a.test/x", "x")]


def test_meta_refresh_and_canonical_are_read_as_browsers_read_them() -> None:
    from services.text.extract.html import parse_html, parse_refresh

    assert parse_refresh("0; url=/new") == (0.0, "/new")
    assert parse_refresh("5;URL='page.html'") == (5.0, "page.html")
    assert parse_refresh("0;/new") == (0.0, "/new")
    assert parse_refresh("1.5 ; url = /y") == (1.5, "/y")
    assert parse_refresh("3") == (3.0, "") and parse_refresh("") is None
    page = parse_html(
        b'<meta http-equiv=Refresh content="0; url=home/index.html"><link rel="Canonical" href=/c>',
        "http://a.test/dir/",
    )
    assert (page.refresh_url, page.refresh_delay) == ("http://a.test/dir/home/index.html", 0.0)
    assert page.canonical == "http://a.test/c"
    plain = parse_html(b"<title>x</title><meta name=refresh content='0;url=/no'>", "http://a.test/")
    assert plain.refresh_url == "" and plain.canonical == ""


def test_page_furniture_is_left_out_of_the_text_but_its_links_are_kept() -> None:
    from services.text.extract.html import parse_html

    main = "Walks along the river start at the mill every Sunday morning. " * 5
    body = (
        "<body><nav><a href=/b>Bridges</a></nav><div role=navigation><a href=/r>Rivers</a></div>"
        f"<main><p>{main}</p></main><aside>Related: bridges</aside><footer>Copyright</footer></body>"
    )
    page = parse_html(body.encode(), "http://a.test/")
    assert page.text == " ".join(main.split())
    assert [u for u, _ in page.links] == ["http://a.test/b", "http://a.test/r"]
    # Content wrapped in furniture (a page that is all <header>) keeps its text.
    wrapped = parse_html(b"<header><h1>Short</h1><p>All content is here.</p></header>", "http://a.test/")
    assert wrapped.text == "Short All content is here."


ARTICLE = (
    "The stone bridge over the Wye was rebuilt in 1783 after the great flood carried away "
    "three of its five arches; the masons reused the old piers and the parapet stones. "
)


def _table_layout(menu: str, content: str) -> str:
    return (
        "<html><body><table><tr><td>" + menu + "</td><td>" + content + "</td></tr></table>"
        "<p>Copyright 2004 the society.</p></body></html>"
    )


def test_link_lists_of_table_and_div_layouts_are_left_out_of_the_text() -> None:
    """Pages of the 2000s mark no <nav>: a block that is mostly links is a menu."""
    cell_menu = "<br>".join(f'<a href="/{w}.html">{w.title()} pages</a>' for w in ("walks", "mills", "fish"))
    rows_menu = (
        "<table>"
        + "".join(
            f'<tr><td><a href="/{w}.html">{w.title()}</a></td></tr>'
            for w in ("walks", "mills", "fish", "news")
        )
        + "</table>"
    )
    div_menu = (
        '<div id="menu"><ul>'
        + "".join(f'<li><a href="/{w}.html">{w.title()}</a></li>' for w in ("walks", "mills", "fish"))
        + "</ul></div>"
    )
    for menu in (cell_menu, rows_menu, div_menu):
        page = parse_html(_table_layout(menu, f"<p>{ARTICLE * 2}</p>").encode(), "http://x.test/")
        assert "Mills" not in page.text and "rebuilt in 1783" in page.text, menu
        assert {u for u, _ in page.links} >= {"http://x.test/mills.html", "http://x.test/fish.html"}


def test_content_with_a_few_links_and_pages_that_are_all_links_keep_their_text() -> None:
    inline = (
        f'<p>{ARTICLE} See <a href="/a">the flood of 1795</a>, <a href="/b">the toll house</a> '
        f'and <a href="/c">the ferry</a> for more.</p>'
    )
    page = parse_html(_table_layout("", inline).encode(), "http://x.test/")
    assert "the toll house" in page.text  # links inside prose: not a list
    directory = (
        "<ul>" + "".join(f'<li><a href="/p{i}">Parish record {i}</a></li>' for i in range(40)) + "</ul>"
    )
    page = parse_html(f"<html><body><h1>Records</h1>{directory}</body></html>".encode(), "http://x.test/")
    assert "Parish record 39" in page.text  # the links are the page: its text is kept


def test_furniture_link_lists_and_form_words_are_kept_apart_as_navigation_text() -> None:
    """What is cut out of the text is not lost: the index reads it as a low-weight field."""
    main = "Walks along the river start at the mill every Sunday morning. " * 5
    login = (
        '<form action="/login"><label for=u>Username</label><input id=u name=u placeholder="Member number">'
        '<input type=password placeholder="Passphrase"><input type=hidden name=csrf value="tok3n">'
        '<input type=submit value="Sign in"><select><option>Remember me</option></select></form>'
    )
    body = (
        f"<body><header><nav><a href=/b>Bridges</a></nav>{login}</header>"
        "<div role=navigation><a href=/r>Rivers</a></div>"
        f"<main><p>{main}</p></main><aside>Related: ferries</aside><footer>Copyright</footer></body>"
    )
    page = parse_html(body.encode(), "http://a.test/")
    assert page.text == " ".join(main.split())
    for word in ("Bridges", "Rivers", "ferries", "Copyright", "Username", "Remember me"):
        assert word in page.nav and word not in page.text, word
    for word in ("Member number", "Passphrase", "Sign in"):  # attributes: no text has them
        assert word in page.nav, word
    assert "tok3n" not in page.nav and page.nav.count("Bridges") == 1  # nav inside header: once

    # A link list of a page that marks no furniture (a list of jobs beside the article).
    jobs = (
        "<ul>"
        + "".join(
            f'<li><a href="/jobs/{i}">{title}</a></li>'
            for i, title in enumerate(("Senior archivist", "Lock keeper", "Towpath warden"))
        )
        + "</ul>"
    )
    page = parse_html(_table_layout("", f"<p>{ARTICLE * 2}</p>{jobs}").encode(), "http://x.test/")
    assert "archivist" not in page.text and "rebuilt in 1783" in page.text
    assert "Senior archivist" in page.nav and "Towpath warden" in page.nav
    assert "rebuilt" not in page.nav

    # A search form in the content: its label stays in the text, its placeholder is nav text.
    page = parse_html(
        f'<p>{ARTICLE}</p><form><label>Find a lock</label><input placeholder="Lock name"></form>'.encode(),
        "http://x.test/",
    )
    assert "Find a lock" in page.text and page.nav == "Lock name"


def test_a_page_that_is_all_links_keeps_them_as_its_text_not_as_navigation() -> None:
    listing = "<ul>" + "".join(f'<li><a href="/job{i}">Canal job {i}</a></li>' for i in range(40)) + "</ul>"
    page = parse_html(f"<html><body><h1>Jobs</h1>{listing}</body></html>".encode(), "http://x.test/")
    assert "Canal job 39" in page.text and page.nav == ""
    plain = parse_html(f"<p>{ARTICLE}</p>".encode(), "http://x.test/")
    assert plain.nav == ""


FRAMESET = b"""<HTML><HEAD><TITLE>Old site</TITLE></HEAD>
<FRAMESET COLS="20%,80%">
  <FRAME SRC="menu.html" NAME="menu" TITLE="Site menu">
  <FRAME SRC="main.html" NAME="main">
  <NOFRAMES><BODY><P>This site uses frames. Read the <A HREF="text/index.html">text version</A>.
  <SCRIPT>var hidden = 1;</SCRIPT></BODY></NOFRAMES>
</FRAMESET></HTML>"""


def test_a_frameset_page_links_its_frames_and_takes_its_text_from_noframes() -> None:
    page = parse_html(FRAMESET, "http://old.test/")
    assert page.title == "Old site"
    assert page.links == [
        ("http://old.test/menu.html", "Site menu"),
        ("http://old.test/main.html", ""),
        ("http://old.test/text/index.html", "text version"),
    ]
    # The <noframes> markup is raw text to the parser: parsed on its own, no tags or script left.
    assert page.text == "This site uses frames. Read the text version ."


def test_a_nofollow_frameset_page_links_nothing() -> None:
    html = FRAMESET.replace(b"</HEAD>", b'<META NAME="robots" CONTENT="nofollow"></HEAD>')
    page = parse_html(html, "http://old.test/")
    assert page.links == []
    assert "text version" in page.text


def test_image_maps_and_iframes_are_links() -> None:
    html = b"""<html><body><p>Choose a department on the map.</p>
    <img src="map.gif" usemap="#m"><map name="m">
      <area shape="rect" coords="0,0,10,10" href="sales.html" alt="Sales">
      <AREA SHAPE=RECT COORDS="10,0,20,10" HREF="support.html">
      <area href="secret.html" rel="nofollow" alt="x"><area alt="no link">
    </map>
    <iframe src="/news/latest.html" title="Latest news">fallback text</iframe>
    </body></html>"""
    page = parse_html(html, "http://shop.test/dept/")
    assert page.links == [
        ("http://shop.test/dept/sales.html", "Sales"),
        ("http://shop.test/dept/support.html", ""),
        ("http://shop.test/news/latest.html", "Latest news"),
    ]
    assert page.text == "Choose a department on the map."


def test_hrefs_are_read_as_browsers_read_them() -> None:
    html = (
        b'<a href="..\\docs\\guide.htm">Guide</a> <a href="files/\n   report.htm">Report</a>'
        b'<base href=" \\root\\ "><a href="x.htm">x</a>'
    )
    page = parse_html(html, "http://iis.test/a/b/")
    assert page.links == [
        ("http://iis.test/docs/guide.htm", "Guide"),  # ../ from the base /root/
        ("http://iis.test/root/files/   report.htm", "Report"),
        ("http://iis.test/root/x.htm", "x"),
    ]


def test_noframes_inside_a_body_gives_links_not_raw_markup_in_the_text() -> None:
    html = (
        b"<html><body><p>Main text here.</p>"
        b"<noframes><p>Fallback <a href=x.html>x</a></p></noframes></body></html>"
    )
    page = parse_html(html, "http://a.test/")
    assert page.links == [("http://a.test/x.html", "x")]
    assert page.text == "Main text here."  # the parser had kept <noframes> as raw markup text


@pytest.mark.parametrize(
    ("head", "body", "title"),
    [
        ("<title>Untitled Document</title>", "<h1>Mill Road Allotments</h1>", "Mill Road Allotments"),
        ("<title>New Page 1</title>", "<h3>minor</h3><h2>Parish <b>News</b></h2>", "Parish News"),
        ("<title>Document sans titre</title>", "<h1> </h1><h1>Les Amis du Canal</h1>", "Les Amis du Canal"),
        ("", "<h1>No title element at all</h1>", "No title element at all"),
        ("<title>Untitled Document</title>", "<p>No heading either.</p>", "Untitled Document"),
        ("<title>The Untitled Document Archive</title>", "<h1>Other</h1>", "The Untitled Document Archive"),
        ("<title>Home</title>", "<h1>Welcome</h1>", "Home"),  # short, but the author's own
    ],
)
def test_an_authoring_tools_default_title_gives_way_to_the_first_heading(head, body, title):
    html = f"<html><head>{head}</head><body>{body}<p>Text of the page.</p></body></html>"
    assert parse_html(html.encode(), "http://x.test/").title == title


@pytest.mark.parametrize(
    "placeholder",
    ["Untitled Document", "untitled-1", "New Page 2", "Unbenanntes Dokument", "無題ドキュメント",
     "Welcome to Adobe GoLive 6", "Insert title here", "index.html", "Documento sin título"],
)  # fmt: skip
def test_placeholder_titles(placeholder):
    assert placeholder_title(placeholder)
    assert not placeholder_title(f"{placeholder} of the county archive")


SCRIPTED = """<html><head><title>Welcome</title><script language=JavaScript src=mm.js></script>
<script>if (screen.width < 800) { window.location.href = "small/index.htm"; }
else { location.replace('big/index.htm'); }</script></head><body>
<input type=button value=Next onclick="location.href='page2.htm'">
<a href="#" onclick="MM_goToURL('parent','contact.htm');return document.MM_returnValue">Contact</a>
<a href="javascript:window.open('popup.htm','w','width=300')">Map</a>
<select name=menu onchange="MM_jumpMenu('parent',this,0)"><option value="">Choose</option>
<option value="history.htm">History</option><option value="members/list.htm">Members</option></select>
<script>var here = location.href + '?q=' + q; document.location = base + 'x.htm';
window.open(url); location.href = "javascript:void(0)";</script>
</body></html>"""


def test_links_written_in_javascript_are_followed():
    """Old sites navigate by script: a home page that only redirects by script, buttons,
    Dreamweaver's MM_goToURL and jump menus (their function in an external mm.js)."""
    links = parse_html(SCRIPTED.encode(), "http://old.test/site/").links
    assert links == [
        ("http://old.test/site/small/index.htm", ""),
        ("http://old.test/site/big/index.htm", ""),
        ("http://old.test/site/page2.htm", ""),
        ("http://old.test/site/popup.htm", ""),
        ("http://old.test/site/contact.htm", ""),
        ("http://old.test/site/history.htm", "History"),
        ("http://old.test/site/members/list.htm", "Members"),
    ]  # expressions ("location.href + ...", "base + 'x.htm'", "window.open(url)") are not URLs
    nofollow = SCRIPTED.replace("<head>", '<head><meta name="robots" content="nofollow">')
    assert parse_html(nofollow.encode(), "http://old.test/site/").links == []


def test_a_legacy_pages_link_queries_are_encoded_in_its_charset():
    """As browsers send them: the query in the page's encoding, the path in UTF-8."""
    html = (
        '<html><body><a href="/search?q=café&x=ü">s</a> <a href="/café.html?n=Müller#top">p</a> '
        '<a href="/x?n=€">e</a> <a href="/x?n=&#28450;">k</a></body></html>'
    )
    links = [url for url, _ in parse_html(html.encode("cp1252"), "http://x.test/", "windows-1252").links]
    assert links == [
        "http://x.test/search?q=caf%E9&x=%FC",
        "http://x.test/café.html?n=M%FCller#top",  # the path is normalize_url's (UTF-8)
        "http://x.test/x?n=%80",  # the euro sign in windows-1252
        "http://x.test/x?n=&%2328450;",  # not in the charset: a character reference, "#" escaped
    ]
    japanese = '<html><body><a href="/cgi-bin/find.cgi?kw=東京">t</a></body></html>'.encode("cp932")
    assert parse_html(japanese, "http://x.test/", "shift_jis").links[0][0].endswith("?kw=%93%8C%8B%9E")
    utf8 = parse_html(html.encode(), "http://x.test/", "utf-8").links
    assert utf8[0][0] == "http://x.test/search?q=café&x=ü"  # left to normalize_url: UTF-8


def test_link_elements_to_the_next_page_and_other_languages_are_followed():
    head = (
        '<link rel=stylesheet href=a.css><link rel="alternate" type="application/rss+xml" href="/feed">'
        '<link rel=next href="?page=2"><link rel=prev href="?page=0" title="Newer posts">'
        '<link rel=alternate hreflang=de href="/de/"><link rel="shortcut icon" href=/favicon.ico>'
        "<link rel=canonical href=/list><link rel=canonical href=/other>"
    )
    page = parse_html(
        f"<html><head>{head}</head><body><a href=x>x</a></body></html>", "http://x.test/list?page=1"
    )
    assert page.canonical == "http://x.test/list"  # the first one
    assert page.links == [
        ("http://x.test/x", "x"),
        ("http://x.test/list?page=2", ""),
        ("http://x.test/list?page=0", "Newer posts"),
        ("http://x.test/de/", ""),
    ]  # not the feed, the stylesheet or the icon
    nofollow = parse_html(
        f"<html><head><meta name=robots content=nofollow>{head}</head></html>", "http://x.test/"
    )
    assert nofollow.links == []


def test_an_image_links_alt_text_is_its_anchor_text():
    html = (
        '<html><body><a href="/p.html"><img src=p.gif alt="Our  products"></a> '
        '<a href="/q.html"><span><img src=q.gif title="Contact us"></span></a> '
        '<a href="/r.html"><img src=r.gif></a> '
        '<a href="/s"><img src=s.gif alt="ignored">Words</a></body></html>'
    )
    assert parse_html(html.encode(), "http://x.test/").links == [
        ("http://x.test/p.html", "Our products"),
        ("http://x.test/q.html", "Contact us"),
        ("http://x.test/r.html", ""),
        ("http://x.test/s", "Words"),  # a link's own words come first
    ]


def test_meta_robots_noarchive():
    page = parse_html(
        b'<html><head><meta name="ROBOTS" content="NOARCHIVE, follow"></head></html>', "http://x.test/"
    )
    assert page.noarchive and not page.noindex and not page.nofollow
    assert parse_html(b'<meta name="robots" content="nocache">', "http://x.test/").noarchive
    assert not parse_html(b"<p>plain</p>", "http://x.test/").noarchive
