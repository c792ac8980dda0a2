"""A build whose records link nowhere skips the link graph job; whichever order the jobs run
in (``services.indexing.link_probe`` guesses it), the segment is the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from services.config import Settings
from services.indexing import build
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.segment import open_segment
from tests.integration.indexing.test_build_publish import CORPUS

WITHOUT_LINKS = [[{k: v for k, v in page.items() if k != "links"} for page in block] for block in CORPUS]


def built_arrays(
    settings: Settings, tmp_path: Path, guess: bool | None, monkeypatch: pytest.MonkeyPatch, name: str
) -> tuple[dict[str, np.ndarray], str]:
    """The arrays of a build with the probe's guess forced (None: the probe's own), and its
    progress lines."""
    if guess is not None:
        monkeypatch.setattr(build, "sample_has_links", lambda _store, _manifest: guess)
    lines: list[str] = []
    result = build.build_index(settings, report=lines.append)
    store = open_blobstore(settings.blob_url)
    arrays, _meta = open_segment(store.download(result.segment, tmp_path / f"{name}.nseg"))
    monkeypatch.undo()
    return arrays, "\n".join(lines)


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key


def test_records_without_links_skip_the_link_graph_and_build_the_same_segment(
    settings: Settings, tmp_path: Path, corpus_writer: Callable[..., list], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, WITHOUT_LINKS)
    skipped, said = built_arrays(settings, tmp_path, None, monkeypatch, "skipped")
    assert "no link graph to build" in said and "link graph and in-link anchor text" not in said
    usual, said = built_arrays(settings, tmp_path, True, monkeypatch, "usual")
    assert "link graph and in-link anchor text" in said
    assert_same(skipped, usual)
    assert skipped["in_docs"].shape == (0,) and not skipped["out_counts"].any()


@pytest.mark.parametrize("engine", ["memory", "mapreduce"])
def test_a_wrong_guess_runs_the_link_graph_and_the_index_again_for_the_same_segment(
    settings: Settings,
    tmp_path: Path,
    corpus_writer: Callable[..., list],
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
) -> None:
    settings = settings.with_overrides(pagerank_engine=engine, pagerank_tolerance=1e-10)
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, CORPUS)
    guessed_wrong, said = built_arrays(settings, tmp_path, False, monkeypatch, "wrong")
    assert "links in the records: the link graph after all" in said
    assert said.count("index: terms, fields and positions") == 2  # anchor text: the index again
    usual, said = built_arrays(settings, tmp_path, None, monkeypatch, "usual")
    assert said.count("index: terms, fields and positions") == 1
    assert_same(guessed_wrong, usual)
    assert guessed_wrong["in_docs"].shape[0] > 0 and guessed_wrong["len_anchor"].any()
