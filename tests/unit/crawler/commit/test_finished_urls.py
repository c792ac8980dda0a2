"""The committer's set of finished URLs: links to them are left out of its inserts."""

from __future__ import annotations

from services.crawler.commit.finished_urls import FinishedUrls
from services.crawler.frontier import entries
from services.crawler.frontier.entries import NewUrl
from services.text.urls import url_id


def test_links_to_finished_urls_are_left_out_and_the_set_stays_bounded() -> None:
    finished = FinishedUrls(cap=3)
    done = [f"http://h.test/{i}" for i in range(3)]
    finished.add(url_id(u) for u in done)
    links = [NewUrl(u, 1) for u in [*done, "http://h.test/new"]]
    kept = finished.unknown(links)
    assert [n.url for n in kept] == ["http://h.test/new"] and finished.skipped == 3
    assert kept[0].key == url_id("http://h.test/new")  # computed once, passed on to add_urls
    finished.add([url_id("http://h.test/a"), url_id("http://h.test/b")])  # over the cap: emptied first
    assert [n.url for n in finished.unknown([NewUrl(done[0], 1)])] == [done[0]]


def test_a_new_committer_learns_the_finished_urls_from_the_frontier(sessions) -> None:
    urls = [f"http://h.test/{i}" for i in range(3)]
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(u, 0, 1.0) for u in urls], 0.0)
        entries.finish(
            s,
            [
                entries.Outcome(url_id(urls[0]), "done", 200),
                entries.Outcome(url_id(urls[1]), "failed", 404),
            ],
        )
    finished = FinishedUrls()
    with sessions() as s:
        assert finished.load(s) == 2
    assert [n.url for n in finished.unknown([NewUrl(u, 1) for u in urls])] == [urls[2]]  # still waiting
