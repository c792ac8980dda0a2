"""The look at a few blocks' first records that decides whether the link graph runs first."""

from __future__ import annotations

import gzip
from pathlib import Path

from services.indexing.link_probe import HEAD_BYTES, manifest_blocks, sample_has_links, spread
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.records import Link, Record, RecordBlockWriter


def block(pages: int, linked_at: int | None = None, text: str = "words") -> bytes:
    writer = RecordBlockWriter()
    for i in range(pages):
        links = [Link("http://a.test/next", "next")] if i == linked_at else []
        url, key = f"http://a.test/{i}", f"{i:040x}"
        writer.add(Record(i, url, key, key, "text/html", text=text, links=links))
    return writer.to_bytes()


def manifest(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(lines)
    return path


def test_blocks_are_read_from_every_part_and_spread_evenly(tmp_path: Path) -> None:
    parts = [
        manifest(tmp_path / "m0.txt.gz", ["records/a\t0,1\n", "records/b\t2\n"]),
        manifest(tmp_path / "m1.txt.gz", ["\n", "records/c\n"]),
    ]
    assert manifest_blocks(parts) == ["records/a", "records/b", "records/c"]
    assert spread([str(i) for i in range(10)], 4) == ["0", "2", "5", "7"]
    assert spread(["x", "y"], 8) == ["x", "y"]


def test_a_link_in_any_sampled_blocks_first_records_counts(tmp_path: Path) -> None:
    store = open_blobstore(f"file://{tmp_path / 'blobs'}")
    store.put("records/plain", block(5))
    store.put("records/linked", block(5, linked_at=3))
    plain = manifest(tmp_path / "plain.txt.gz", ["records/plain\t0\n"])
    both = manifest(tmp_path / "both.txt.gz", ["records/plain\t0\n", "records/linked\t1\n"])
    assert not sample_has_links(store, [plain])
    assert sample_has_links(store, [both])


def test_a_link_past_the_first_bytes_is_not_seen(tmp_path: Path) -> None:
    store = open_blobstore(f"file://{tmp_path / 'blobs'}")
    long_text = " ".join(f"w{i}" for i in range(40_000))  # past HEAD_BYTES once compressed
    data = block(3, linked_at=2, text=long_text)
    assert len(data) > 2 * HEAD_BYTES
    store.put("records/long", data)
    assert not sample_has_links(store, [manifest(tmp_path / "m.txt.gz", ["records/long\n"])])


def test_a_block_that_cannot_be_read_says_links_so_the_job_reports_it(tmp_path: Path) -> None:
    store = open_blobstore(f"file://{tmp_path / 'blobs'}")
    store.put("records/broken", b"\x1f\x8b\x08\x00 not a deflate stream")
    assert sample_has_links(store, [manifest(tmp_path / "a.txt.gz", ["records/missing\n"])])
    assert sample_has_links(store, [manifest(tmp_path / "b.txt.gz", ["records/broken\n"])])
