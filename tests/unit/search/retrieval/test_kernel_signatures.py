"""A segment opened from its file warms every search kernel for what queries pass: queries of
every kind afterwards compile nothing (a signature compiled in a query's time costs that query
a second or two on a fresh install, where numba's cache is empty)."""

from __future__ import annotations

from pathlib import Path

from services import compiled
from services.config.search import SearchSettings
from services.search.query.language import parse_query
from services.search.retrieval.retrieve import retrieve_ranked
from services.search.retrieval.segment import SegmentIndex
from services.storage.formats.segment import pack_segment
from services.text.analysis.analyze import analyzer_version
from tests.unit.search.retrieval.web_pages import arrays_of

PAGES = [
    (
        f"http://site{n % 7}.test/page{n}",
        f"Glaciers and moraines {n}",
        f"The glacier melted; glaciers retreat, moraines remain. Page {n} of the valley walks "
        + ("fjords carved deep " if n % 3 else "rivers running ")
        + ("ice sheets" if n % 2 else "meltwater lakes"),
        "",
    )
    for n in range(300)
]

QUERIES = [
    "glaciers moraines",  # AND
    "Glaciers retreating",  # words as typed: forms rescored
    "glacier fjords rivers meltwater",  # AND falls back to OR, four words: RM3 feedback
    "glacier OR fjords OR lakes OR valley",  # an explicit OR: as written, no feedback
    '"glaciers retreat"',  # a phrase: positions
    "moraines -fjords",  # an exclusion
]


def test_queries_of_every_kind_compile_nothing_after_a_segment_opens(tmp_path: Path) -> None:
    path = tmp_path / "pages.nseg"
    meta = {"num_docs": len(PAGES), "languages": {"en": len(PAGES)}, "analyzer": analyzer_version()}
    arrays = arrays_of(PAGES, with_forms=True)
    assert arrays["form_filters"].shape[0]  # the words-as-typed rescore probes them
    path.write_bytes(pack_segment(arrays, meta))
    index = SegmentIndex.open(path)  # warms the kernels for a mapped segment's arrays
    before = {kernel.fn.__qualname__: set(map(str, kernel.signatures)) for kernel in compiled.KERNELS}
    modes = set()
    for q in QUERIES:
        # 10 and 1,000 deep, and a results page of 10 cut from the 1,000 (its partial matches
        # counted, not ranked: ``rank.count_or``).
        for k, upto in ((10, None), (1000, None), (1000, 10)):
            result = retrieve_ranked(index, parse_query(q), k, SearchSettings(), upto=upto)
            assert result.ranked.docs.shape[0], q
            modes.add(result.mode)
    assert {"and", "and+or", "or+feedback", "phrase"} <= modes
    after = {kernel.fn.__qualname__: set(map(str, kernel.signatures)) for kernel in compiled.KERNELS}
    grown = {name: after[name] - before[name] for name in after if after[name] - before[name]}
    assert not grown, f"compiled in a query's time: {grown}"
