"""The home page's operator examples: taken from the index, each one tried first."""

from __future__ import annotations

from services.search.query.examples import operator_examples


def test_examples_come_from_the_index_and_only_those_that_find_something():
    hosts = [("wiki.test:80", 90), ("127.0.0.1:8001", 10)]
    words = [("wikipedia", 100), ("river", 30), ("angola", 12), ("zebra", 3)]
    finds = {'"boundary layer"', "river OR angola", "river -zebra", "site:wiki.test", "intitle:angola"}
    ex = operator_examples(hosts, words, ["sample wiki", "boundary layer"], 100, finds.__contains__)
    # "wikipedia" is in every title: it narrows nothing, so it is no example.
    assert ex.shown() == [
        '"boundary layer"',
        "river OR angola",
        "river -zebra",
        "site:wiki.test",
        "intitle:angola",
    ]


def test_an_index_with_nothing_that_works_shows_no_examples():
    assert operator_examples([], [], [], 0, lambda q: True).shown() == []
    assert operator_examples([("a.test:81", 1)], [("word", 1)], [], 1, lambda q: False).shown() == []
