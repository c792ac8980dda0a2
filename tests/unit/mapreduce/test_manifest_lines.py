"""The manifest format: block -> doc_nums whose current record it holds."""

from __future__ import annotations

import pytest

from mapreduce.record_job import (
    ManifestError,
    Span,
    Wanted,
    current_records,
    manifest_line,
    manifest_lines,
    parse_manifest_line,
)
from services.storage.formats.records import Record


def rec(doc_num: int, text: str) -> Record:
    return Record(
        doc_num=doc_num,
        url=f"http://x.test/{doc_num}",
        url_id="0" * 40,
        doc_id="1" * 40,
        content_type="text/html",
        text=text,
    )


def test_lines_group_sorted_pairs_per_block_and_round_trip() -> None:
    pairs = [("records/a.rec.gz", 3), ("records/a.rec.gz", 1), ("records/b.rec.gz", 2)]
    lines = list(manifest_lines(pairs))
    assert lines == ["records/a.rec.gz\t1,3\n", "records/b.rec.gz\t2\n"]
    assert parse_manifest_line(lines[0]) == ("records/a.rec.gz", Wanted(frozenset({1, 3}), {}))
    assert parse_manifest_line("records/old.rec.gz\n") == ("records/old.rec.gz", None)
    assert parse_manifest_line("records/none.rec.gz\t\n") == ("records/none.rec.gz", Wanted(frozenset(), {}))


def test_lines_with_positions_round_trip() -> None:
    rows = [("records/w.rec.gz", 7, 2), ("records/w.rec.gz", 5, 0)]
    lines = list(manifest_lines(rows))
    assert lines == ["records/w.rec.gz\t5:0,7:2\n"]
    assert parse_manifest_line(lines[0]) == ("records/w.rec.gz", Wanted(frozenset({5, 7}), {0: 5, 2: 7}))


def test_unordered_pairs_and_bad_lines_are_refused_by_name() -> None:
    with pytest.raises(ManifestError, match="records/a.rec.gz.*ordered by record_block"):
        list(manifest_lines([("records/a.rec.gz", 1), ("records/b.rec.gz", 2), ("records/a.rec.gz", 3)]))
    with pytest.raises(ManifestError, match="tab"):
        list(manifest_lines([("records/a\tb", 1)]))
    with pytest.raises(ManifestError, match="records/a.rec.gz.*nimbus index"):
        parse_manifest_line("records/a.rec.gz\t1,x\n")


def test_a_share_of_a_block_round_trips_and_bad_shares_are_refused_by_name() -> None:
    line = manifest_line("records/s.rec.gz", [(4, 3, 900), (9, 5, 1500)], Span(3, 7))
    assert line == "records/s.rec.gz\t4:3,9:5\t3-7\n"  # an entry's offset is not written
    assert parse_manifest_line(line) == (
        "records/s.rec.gz",
        Wanted(frozenset({4, 9}), {3: 4, 5: 9}, Span(3, 7)),
    )
    to_end = parse_manifest_line(manifest_line("records/s.rec.gz", [(2, 8)], Span(8, None, 4096, None)))
    assert to_end[1] is not None and to_end[1].span == Span(8, None, 4096, None)
    assert Span.parse("0-3@0-512") == Span(0, 3, 0, 512) and Span(0, 3, 0, 512).text() == "0-3@0-512"
    with pytest.raises(ManifestError, match="records/s.rec.gz.*outside"):
        parse_manifest_line("records/s.rec.gz\t4:3,9:9\t3-7\n")
    with pytest.raises(ManifestError, match="records/s.rec.gz.*without its position"):
        parse_manifest_line("records/s.rec.gz\t4:3,9\t3-7\n")
    for bad, why in [
        ("3", "not <first>-<end>"),
        ("3-7@10", "not <first>-<end>"),
        ("3-7@10-", "not both"),
        ("3-@10-20", "not both"),
        ("7-3", "empty"),
        ("3-7@20-10", "empty"),
        ("x-7", "invalid"),
    ]:
        with pytest.raises(ManifestError, match=f"records/s.rec.gz.*{why}"):
            parse_manifest_line(f"records/s.rec.gz\t4:3\t{bad}\n")


def test_current_records_keep_listed_docs_and_the_last_of_a_repeat() -> None:
    block = [rec(0, "old"), rec(1, "one"), rec(0, "mid"), rec(2, "two"), rec(0, "new")]
    kept, stale = current_records(iter(block), Wanted(frozenset({0, 2}), {}))
    assert [(r.doc_num, r.text) for r in kept] == [(2, "two"), (0, "new")]
    assert stale == 3
    everything, none = current_records(iter(block), None)
    assert len(everything) == 5 and none == 0


def test_positions_pick_and_number_records_written_before_their_doc_nums() -> None:
    """A crawl worker's block: records carry -1; the committer's numbers come with the manifest,
    and only the listed positions count (a duplicate's record is never indexed)."""
    block = [rec(-1, "a"), rec(-1, "duplicate of a"), rec(-1, "c")]
    kept, stale = current_records(iter(block), Wanted(frozenset({4, 9}), {0: 9, 2: 4}))
    assert [(r.doc_num, r.text) for r in kept] == [(9, "a"), (4, "c")]
    assert stale == 1


def test_map_tasks_one_per_core_locally_many_on_emr_or_as_set():
    import os

    from services.config import Settings
    from services.indexing.manifest import MANIFEST_PARTS, manifest_parts

    assert manifest_parts(Settings.of(mr_runner="local")) == (os.cpu_count() or 1)
    assert manifest_parts(Settings.of(mr_runner="emr")) == MANIFEST_PARTS
    assert manifest_parts(Settings.of(mr_runner="local", mr_map_tasks=5)) == 5


def test_anchor_lines_are_copied_alone_for_the_index_job(tmp_path) -> None:
    from mapreduce.mr_linkgraph import adjacency_rows, write_anchor_lines

    links = tmp_path / "links.jsonl"
    links.write_bytes(b'0\t[1]\n1\t[]\n@anchor\t1\t"home | start"\n2\t[0, 1]\n')
    assert write_anchor_lines(links, tmp_path / "anchors.txt") == 1
    assert (tmp_path / "anchors.txt").read_bytes() == b'@anchor\t1\t"home | start"\n'
    assert dict(adjacency_rows(links)) == {0: [1], 1: [], 2: [0, 1]}
    (tmp_path / "none.jsonl").write_bytes(b"0\t[]\n")
    assert write_anchor_lines(tmp_path / "none.jsonl", tmp_path / "empty.txt") == 0


def test_a_task_reads_only_its_spans_bytes_and_refuses_a_span_that_is_not_its_positions(tmp_path) -> None:
    """``block_records`` with a span: a ranged read of its bytes; where those bytes hold
    another number of records than its positions (a block rewritten after the manifest),
    the line is refused by name, not read as other documents."""
    from mapreduce.mr_index import MRIndex
    from services.storage.blobs.blobstore import open_blobstore
    from services.storage.formats.records import RecordBlockWriter

    writer = RecordBlockWriter()
    places = [writer.add(rec(-1, f"r{i}")) for i in range(5)]
    store = open_blobstore(f"file://{tmp_path}")
    store.put("records/s.rec.gz", writer.to_bytes())
    job = MRIndex(args=["--blob-url", f"file://{tmp_path}"])
    line = manifest_line("records/s.rec.gz", [(7, 2), (8, 3)], Span(2, 4, places[2][0], places[4][0]))
    assert [(r.doc_num, r.text) for r in job.block_records(line)] == [(7, "r2"), (8, "r3")]
    misplaced = manifest_line("records/s.rec.gz", [(7, 2), (8, 3)], Span(2, 4, places[1][0], places[4][0]))
    with pytest.raises(ManifestError, match="records/s.rec.gz.*holds 3 records, not 2"):
        list(job.block_records(misplaced))
    to_end = manifest_line("records/s.rec.gz", [(9, 4)], Span(4, None, places[4][0], None))
    assert [(r.doc_num, r.text) for r in job.block_records(to_end)] == [(9, "r4")]
