"""A document's URL form and host id, from (doc_num, url) pairs in one pass."""

from __future__ import annotations

from services.indexing.url_facts import host_count, url_facts_of
from services.ranking.entry_pages import UrlKind

URLS = [
    (0, "http://b.test/"),
    (1, "http://a.test/docs/"),
    (3, "http://b.test/x/y.pdf"),
    (4, "https://b.test/"),  # another scheme: another host
    (5, "http://a.test/x/y/z"),
    (9, "http://c.test/"),  # past the documents asked for: left out
]


def test_hosts_are_numbered_by_first_document_and_gaps_are_hosts_of_their_own() -> None:
    _kinds, hosts = url_facts_of(URLS, 7)
    count = host_count(hosts)
    # b.test 0, a.test 1, https b.test 2; documents 2 and 6 have no URL: hosts 3 and 4.
    assert hosts.tolist() == [0, 1, 3, 0, 2, 1, 4]
    assert count == 5


def test_url_facts_give_the_forms_and_the_same_hosts_in_one_pass() -> None:
    kinds, hosts = url_facts_of(iter(URLS), 7)  # an iterator: read once
    assert kinds.tolist() == [
        UrlKind.ROOT,
        UrlKind.SUBROOT,
        UrlKind.PATH,  # no URL: no entry-page evidence
        UrlKind.FILE,
        UrlKind.ROOT,
        UrlKind.PATH,
        UrlKind.PATH,
    ]
    assert hosts.tolist() == url_facts_of(URLS, 7)[1].tolist()  # read once or from a list: the same
