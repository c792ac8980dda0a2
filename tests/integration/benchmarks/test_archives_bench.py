"""The archive-crawl benchmark runs whole on a tiny archive and prints both figures and the
ratios (benchmarks/archives.py --quick): a smoke test, no timing asserted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.archives import main

pytestmark = pytest.mark.mariadb


def test_the_quick_run_prints_the_bare_loop_the_crawl_and_the_ratios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--only", "warc", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| 1 \| (\w+) \| ([\d,]+) \|", out, re.M)}
    assert set(rows) == {"bare", "crawl", "1w", "2w"}
    assert len(set(rows.values())) == 1 and rows["bare"] != "0"  # every contender read every record
    assert re.search(r"crawl/bare records/s: \d+\.\d\dx", out)
    assert re.search(r"CPU/record 2 workers / 1 worker: \d+\.\d\dx nimbus", out)
