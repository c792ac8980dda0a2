"""benchmarks.delta_ranking cuts a collection's documents in order: a base, then the deltas."""

from __future__ import annotations

from pathlib import Path

from benchmarks.delta_ranking import cut


def test_cut_keeps_every_document_once_in_order(tmp_path: Path) -> None:
    root = tmp_path / "coll"
    root.mkdir()
    lines = [f'{{"id": "{i}", "title": "t{i}", "text": "x"}}\n' for i in range(23)]
    (root / "docs.jsonl").write_text("".join(lines), encoding="utf-8")
    folders = cut(root, 0.3, 3, tmp_path / "parts")
    assert [f.name for f in folders] == ["coll-0", "coll-1", "coll-2", "coll-3"]
    parts = [(f / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True) for f in folders]
    assert sum(parts, []) == lines  # all of them, once, in order
    assert len(parts[0]) == 16 and [len(p) for p in parts[1:]] == [3, 3, 1]
