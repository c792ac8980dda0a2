"""Records dealt over map tasks: contiguous runs, parts even to a record, a block where one
part ends and the next begins dealt to both by its positions."""

from __future__ import annotations

import random

from mapreduce.record_job import Span, Wanted, current_records, manifest_line, parse_manifest_line
from services.indexing.manifest import deal_block
from services.storage.formats.records import RecordBlockWriter, iter_records
from tests.unit.mapreduce.test_manifest_lines import rec  # a record of a block, by number and text


def deal_all(blocks: list[list[tuple[int, ...]]], count: int) -> list[list[tuple[int, list, object]]]:
    total = sum(len(b) for b in blocks)
    out, first = [], 0
    for entries in blocks:
        out.append(deal_block(entries, first, total, count))
        first += len(entries)
    return out


def block_of(first_doc: int, size: int) -> list[tuple[int, ...]]:
    return [(first_doc + i, i) for i in range(size)]


def test_uneven_blocks_give_parts_even_to_a_record() -> None:
    sizes = [499, 1485, 2932, 5259, 8468, 938, 1844, 4131, 8570, 8000, 7000, 6000]
    blocks, doc = [], 0
    for size in sizes:
        blocks.append(block_of(doc, size))
        doc += size
    for count in (2, 3, 7, 64):
        loads = [0] * count
        parts_in_order = []
        for lines in deal_all(blocks, count):
            for part, entries, _span in lines:
                loads[part] += len(entries)
                parts_in_order.append(part)
        assert max(loads) - min(loads) <= 1, (count, loads)
        assert parts_in_order == sorted(parts_in_order)  # contiguous runs, in block order
        assert set(parts_in_order) == set(range(count))


def test_a_split_block_spans_cover_every_position_once_and_hold_their_entries() -> None:
    rng = random.Random(3)
    for _ in range(300):
        size = rng.randint(2, 60)
        stale = rng.randint(0, 10)  # records no entry names (superseded versions)
        positions = sorted(rng.sample(range(size + stale), size))
        docs = rng.sample(range(1000), size)  # doc order need not be position order
        entries = sorted(zip(docs, positions, strict=True))
        first, total, count = rng.randint(0, 50), 0, rng.randint(2, 9)
        total = first + size + rng.randint(0, 50)
        lines = deal_block(entries, first, total, count)
        assert sorted(e for _, share, _ in lines for e in share) == entries
        if len(lines) == 1:
            assert lines[0][2] is None
            continue
        spans = [span for _, _, span in lines]
        assert spans[0].first == 0 and spans[-1].end is None
        assert all(a.end == b.first for a, b in zip(spans, spans[1:], strict=False))  # no gap, no overlap
        assert all(span.byte_first is None for span in spans)  # no offsets given: none said
        for _part, share, span in lines:
            assert all(span.holds(p) for _, p in share)
            assert share == sorted(share)
        assert [p for p, _, _ in lines] == sorted({p for p, _, _ in lines})


def test_a_block_without_positions_goes_whole_to_one_part() -> None:
    assert deal_block([(5,), (6,), (7,)], 0, 4, 2) == [(0, [(5,), (6,), (7,)], None)]
    assert deal_block([(5, 0), (6, -1)], 0, 2, 2) == [(0, [(5, 0), (6, -1)], None)]
    assert deal_block([], 3, 4, 2) == [(1, [], None)]


def test_the_lines_of_a_split_block_read_what_the_whole_line_reads() -> None:
    """A block of seven records, two of them superseded and one doc renumbered: dealt to
    three parts, each line reads only its span's bytes, and the lines' records and stale
    counts add up to the whole block's."""
    writer = RecordBlockWriter()
    places = [writer.add(rec(-1, f"r{i}")) for i in range(7)]
    data = writer.to_bytes()
    # doc 4 recrawled: its current record at position 5
    entries = [(doc, i, places[i][0]) for doc, i in [(10, 0), (11, 1), (12, 3), (4, 5), (13, 6)]]
    whole = parse_manifest_line(manifest_line("records/b.rec.gz", entries))[1]
    assert whole is not None
    kept, stale = current_records(iter_records(data), whole)
    got, stale_sum, lines = [], 0, deal_block(entries, 0, 5, 3)
    assert len(lines) == 3
    for _part, share, span in lines:
        assert span is not None and span.byte_first is not None
        name, wanted = parse_manifest_line(manifest_line("records/b.rec.gz", share, span))
        assert name == "records/b.rec.gz" and isinstance(wanted, Wanted) and wanted.span == span
        part = data[span.byte_first : span.byte_end]  # what the task's ranged read gets
        part_kept, part_stale = current_records(iter_records(part), wanted)
        got += [(r.doc_num, r.text) for r in part_kept]
        stale_sum += part_stale
    assert sorted(got) == sorted((r.doc_num, r.text) for r in kept)
    assert stale_sum == stale == 2
    assert [s.text() for _, _, s in lines] == [
        f"0-3@0-{places[3][0]}",
        f"3-6@{places[3][0]}-{places[6][0]}",
        f"6-@{places[6][0]}-",
    ]
    assert Span.parse(lines[1][2].text()) == lines[1][2]
