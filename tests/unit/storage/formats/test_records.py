"""Record blocks: whole-block reads for jobs, single-record ranged reads for snippets."""

from __future__ import annotations

import pytest

from services.storage.errors import BlockFormatError
from services.storage.formats.records import (
    Link,
    Record,
    RecordBlockWriter,
    decode_record,
    iter_records,
    leading_records,
)


def _records() -> list[Record]:
    return [
        Record(
            doc_num=i,
            url=f"http://a.test/{i}",
            url_id=f"{i:040x}",
            doc_id=f"{i + 100:040x}",
            content_type="text/html",
            title=f"Title {i} — ünïcode",
            text="body " * i,
            links=[Link(f"http://a.test/{i + 1}", "next")],
        )
        for i in range(5)
    ]


def test_whole_block_round_trip():
    writer = RecordBlockWriter()
    for rec in _records():
        writer.add(rec)
    assert list(iter_records(writer.to_bytes())) == _records()


def test_a_share_of_a_block_is_its_positions_whatever_the_members_hold():
    """A map task's share (``start`` .. ``stop`` - 1): counted by records, also where one
    gzip member holds several (a hand-made block); nothing past ``stop`` is read."""
    import gzip

    recs = _records()
    writer = RecordBlockWriter()
    for rec in recs:
        writer.add(rec)
    data = writer.to_bytes()
    joined = gzip.compress("".join(r.to_json() for r in recs[:3]).encode()) + gzip.compress(
        "".join(r.to_json() for r in recs[3:]).encode()
    )
    for block in (data, joined):
        for start in range(6):
            for stop in (None, *range(start, 6)):
                assert list(iter_records(block, start=start, stop=stop)) == recs[start:stop]
    # Reading ends at ``stop``: a block cut short after it is not read that far.
    assert list(iter_records(data[: len(data) - 10], stop=2)) == recs[:2]


def test_each_member_decodes_alone():
    writer = RecordBlockWriter()
    spans = [writer.add(rec) for rec in _records()]
    data = writer.to_bytes()
    for (offset, length), rec in zip(spans, _records(), strict=True):
        assert decode_record(data[offset : offset + length]) == rec


def test_a_member_decodes_without_its_links_for_a_snippet():
    writer = RecordBlockWriter()
    rec = _records()[3]
    offset, length = writer.add(rec)
    light = decode_record(writer.to_bytes()[offset : offset + length], links=False)
    assert light.links == [] and rec.links
    assert (light.doc_num, light.text, light.title, light.url) == (rec.doc_num, rec.text, rec.title, rec.url)


def test_corrupt_member_is_a_clear_error():
    writer = RecordBlockWriter()
    offset, length = writer.add(_records()[0])
    with pytest.raises(BlockFormatError, match="corrupt record"):
        decode_record(writer.to_bytes()[offset : offset + length - 4], "records/x.rec.gz")
    with pytest.raises(BlockFormatError, match="corrupt or truncated"):
        list(iter_records(b"not gzip at all"))


def test_truncated_or_odd_blocks_are_clear_errors_and_joined_records_still_read():
    import gzip

    writer = RecordBlockWriter()
    for rec in _records():
        writer.add(rec)
    data = writer.to_bytes()
    with pytest.raises(BlockFormatError, match="records/x.rec.gz: corrupt or truncated"):
        list(iter_records(data[:-10], "records/x.rec.gz"))
    with pytest.raises(BlockFormatError, match="corrupt or truncated"):
        list(iter_records(data + b"trailing junk", "records/x.rec.gz"))
    with pytest.raises(BlockFormatError, match="record 0 is not a record"):
        list(iter_records(gzip.compress(b"[1, 2]"), "records/x.rec.gz"))
    with pytest.raises(BlockFormatError, match="corrupt record 0"):
        list(iter_records(gzip.compress(b'{"doc_num": 1'), "records/x.rec.gz"))
    # A hand-made block: several records' JSON in one gzip member.
    joined = gzip.compress("".join(r.to_json() for r in _records()).encode())
    assert list(iter_records(joined)) == _records()


def test_record_json_round_trips_floats_unicode_and_slashes_exactly():
    import json
    import random

    from services.storage.formats.records import Link, Record

    rng = random.Random(5)
    for _ in range(200):
        fetched = rng.random() * 2e9
        record = Record(
            3,
            "http://h.test/a/b?x=1",
            "u" * 40,
            "d" * 40,
            "text/html",
            title="Straße “quotes” \u2028 line",
            text='x/y \\ " \t é 中文',
            links=[Link("http://h.test/c", "a/b")],
            fetched_at=fetched,
        )
        assert Record.from_dict(json.loads(record.to_json())) == record
        block = RecordBlockWriter()
        block.add(record)
        assert list(iter_records(block.to_bytes())) == [record]  # the jobs' reader, exactly


def test_leading_records_are_the_whole_members_within_a_blocks_first_bytes():
    writer = RecordBlockWriter()
    spans = [writer.add(rec) for rec in _records()]
    data = writer.to_bytes()
    assert list(leading_records(data)) == _records()
    third_ends = spans[2][0] + spans[2][1]
    assert list(leading_records(data[:third_ends])) == _records()[:3]
    assert list(leading_records(data[: third_ends + 5])) == _records()[:3]  # the fourth cut off
    assert list(leading_records(b"")) == []
    with pytest.raises(BlockFormatError, match="corrupt"):
        list(leading_records(b"\x1f\x8b\x08\x00garbage that is no deflate stream"))
