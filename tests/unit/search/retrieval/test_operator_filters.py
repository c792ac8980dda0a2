"""The operators' document mask, without a database: DocFacts from rows."""

from __future__ import annotations

import numpy as np

from services.search.retrieval.filters import DocFacts, on_site, stored_type, type_code
from services.storage.formats.blocks import ContentType

ROWS = [
    (0, "http://nasa.gov/a", "text/html"),
    (1, "https://WWW.NASA.gov/b", "text/html; charset=utf-8"),
    (2, "http://fakenasa.gov/c", "application/pdf"),
    (3, "not a url", "PDF"),  # a type name, as older ingests stored it
    (9, "http://beyond.index/", "text/html"),  # not in this index version: left out
]


def test_sites_hold_subdomains_but_not_lookalikes():
    assert on_site("www.nasa.gov", "nasa.gov") and on_site("nasa.gov", "nasa.gov")
    assert not on_site("fakenasa.gov", "nasa.gov") and not on_site("nasa.gov", "www.nasa.gov")
    facts = DocFacts.from_rows(ROWS, 4)
    assert facts.on_sites(["nasa.gov"]).tolist() == [True, True, False, False]
    assert facts.on_sites(["nowhere.org"]).tolist() == [False] * 4


def test_a_site_with_a_port_is_that_port_only_and_without_one_every_port():
    rows = [
        (0, "http://127.0.0.1:44503/a", "text/html"),
        (1, "http://127.0.0.1:44504/b", "text/html"),
        (2, "http://nasa.gov/c", "text/html"),  # port 80, the scheme's
        (3, "https://www.nasa.gov:8443/d", "text/html"),
        (4, "http://[::1]:8001/e", "text/html"),
    ]
    facts = DocFacts.from_rows(rows, 5)
    assert facts.on_sites(["127.0.0.1:44503"]).tolist() == [True, False, False, False, False]
    assert facts.on_sites(["127.0.0.1"]).tolist() == [True, True, False, False, False]
    assert facts.on_sites(["nasa.gov"]).tolist() == [False, False, True, True, False]
    assert facts.on_sites(["nasa.gov:80"]).tolist() == [False, False, True, False, False]
    assert facts.on_sites(["[::1]:8001"]).tolist() == facts.on_sites(["[::1]"]).tolist()
    assert facts.on_sites(["[::1]"]).tolist() == [False, False, False, False, True]
    assert not on_site("127.0.0.1:44503", "127.0.0.1:1")


def test_types_from_mime_or_name_and_unknown_types_match_nothing():
    assert (
        stored_type("text/html; charset=utf-8") == ContentType.HTML and stored_type("PDF") == ContentType.PDF
    )
    assert stored_type("") == ContentType.OTHER and type_code("exe") is None and type_code("other") is None
    facts = DocFacts.from_rows(ROWS, 4)
    assert facts.of_types(["pdf"]).tolist() == [False, False, True, True]
    assert not np.any(facts.of_types(["exe"]))


def test_documents_without_a_row_match_no_site():
    facts = DocFacts.from_rows(ROWS[:1], 3)
    assert facts.host_of.tolist() == [0, -1, -1] and facts.on_sites(["nasa.gov"]).tolist() == [
        True,
        False,
        False,
    ]
