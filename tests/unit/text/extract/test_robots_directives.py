"""Robots directives: the X-Robots-Tag header's (and which crawler they bind), the meta tag's."""

from __future__ import annotations

import pytest

from services.text.extract.robots_directives import (
    NOARCHIVE,
    NOFOLLOW,
    NOINDEX,
    meta_directives,
    robots_tag_directives,
)

AGENT = "NimbusBot/0.1 (+https://example.invalid/bot)"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noindex"], {"noindex"}),
        (["NoIndex, NOFOLLOW"], {"noindex", "nofollow"}),
        (["noindex", "nofollow"], {"noindex", "nofollow"}),  # the header given twice
        (["none"], {"none"}),
        (["nimbusbot: noindex"], {"noindex"}),  # addressed to us by our product token
        (["NimbusBot: nofollow, noarchive"], {"nofollow", "noarchive"}),
        (["otherbot: noindex, nofollow"], set()),  # addressed to another crawler
        (["otherbot: noindex", "nofollow"], {"nofollow"}),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], {"unavailable_after"}),  # a colon, no addressee
        (["max-snippet: 20, noindex"], {"max-snippet", "noindex"}),
        ([""], set()),
    ],
)
def test_directives_that_bind_us(values, expected):
    assert robots_tag_directives(values, AGENT) == expected


def test_none_means_noindex_and_nofollow():
    directives = robots_tag_directives(["none"], AGENT)
    assert directives & NOINDEX and directives & NOFOLLOW


def test_noarchive_and_bings_nocache_ask_for_no_cached_copy():
    assert robots_tag_directives(["noarchive"], AGENT) & NOARCHIVE
    assert robots_tag_directives(["nimbusbot: nocache"], AGENT) & NOARCHIVE
    assert not robots_tag_directives(["otherbot: noarchive"], AGENT) & NOARCHIVE


def test_meta_directives():
    assert meta_directives("NOINDEX, Follow,") == {"noindex", "follow"}
    assert meta_directives("") == frozenset()
