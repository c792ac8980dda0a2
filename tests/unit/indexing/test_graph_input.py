"""The link graph's input: manifest parts with the name lines dealt among them."""

from __future__ import annotations

import gzip
from pathlib import Path

from services.indexing.graph_input import graph_input


def write_gz(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(lines)
    return path


def read_gz(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.readlines()


def test_name_lines_are_dealt_over_the_parts_in_order_and_none_is_lost(tmp_path: Path) -> None:
    parts = [write_gz(tmp_path / f"manifest-{i}.txt.gz", [f"block{i}\t{i}\n"]) for i in range(3)]
    names = [f'@name\tkey{i}\t{i}\t""\n' for i in range(7)]
    written = graph_input(parts, write_gz(tmp_path / "names.txt.gz", names), len(names), tmp_path)
    assert len(written) == 3
    contents = [read_gz(path) for path in written]
    assert [lines[0] for lines in contents] == [f"block{i}\t{i}\n" for i in range(3)]
    assert [line for lines in contents for line in lines[1:]] == names
    assert [len(lines) - 1 for lines in contents] == [2, 2, 3]


def test_a_short_count_leaves_the_rest_to_the_last_part(tmp_path: Path) -> None:
    parts = [write_gz(tmp_path / f"manifest-{i}.txt.gz", [f"block{i}\n"]) for i in range(2)]
    names = [f'@name\tkey{i}\t{i}\t""\n' for i in range(5)]
    written = graph_input(parts, write_gz(tmp_path / "names.txt.gz", names), 2, tmp_path)
    assert [line for path in written for line in read_gz(path)[1:]] == names


def test_without_name_lines_the_manifest_is_the_input(tmp_path: Path) -> None:
    parts = [write_gz(tmp_path / "manifest-0.txt.gz", ["block0\n"])]
    names = write_gz(tmp_path / "names.txt.gz", [])
    assert graph_input(parts, names, 0, tmp_path) == parts
    assert graph_input([], names, 3, tmp_path) == [names]
