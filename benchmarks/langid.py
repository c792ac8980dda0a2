"""Language identification: accuracy and CPU per page, Nimbus (CLD2) against py3langid.

    .venv/bin/python -m benchmarks.langid [--sizes 300 500 1000]

On data/langid/udhr.jsonl (the Universal Declaration of Human Rights in the 207 languages
CLD2 has a code for, as the crawler's parser reads the pages): for each sample size, the
share of pages whose identified language is their ``lang`` attribute's primary subtag,
the agreement with CLD2 on the whole sample, and the CPU microseconds a page of
``services.text.analysis.lang.identify`` (which reads the first ``_SAMPLE_CHARS`` characters), in
the same run as py3langid (the peer: langid.py's model, pure Python and numpy) on the
same pages. The sample size trades CPU for accuracy: this prints both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import services.text.analysis.lang as lang

DATA = Path(__file__).resolve().parents[1] / "data" / "langid" / "udhr.jsonl"


def _samples() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    return [(r["lang"].split("-")[0].lower(), r["text"]) for r in rows]


def _nimbus(samples: list[tuple[str, str]], chars: int) -> tuple[list[str], float]:
    before = lang._SAMPLE_CHARS
    lang._SAMPLE_CHARS = chars
    try:
        started = time.thread_time()
        found = [lang.identify(text) for _code, text in samples]
        return found, time.thread_time() - started
    finally:
        lang._SAMPLE_CHARS = before


def _peer(samples: list[tuple[str, str]], chars: int) -> tuple[list[str], float] | None:
    try:
        import py3langid
    except ImportError:
        return None
    py3langid.classify("warm up the model")
    started = time.thread_time()
    found = [str(py3langid.classify(text[:chars])[0]) for _code, text in samples]
    return found, time.thread_time() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[300, 500, 1000])
    args = p.parse_args(argv)
    samples = _samples()
    truth = [code for code, _text in samples]
    whole, _ = _nimbus(samples, 10**6)
    n = len(samples)
    print(f"{n} pages (data/langid/udhr.jsonl); identify's default sample: {lang._SAMPLE_CHARS} characters")
    print(f"{'who':10s} {'chars':>5s} {'right':>12s} {'= whole':>12s} {'us/page':>8s}")
    for chars in args.sizes:
        found, seconds = _nimbus(samples, chars)
        right = sum(f == t for f, t in zip(found, truth, strict=True))
        same = sum(f == w for f, w in zip(found, whole, strict=True))
        shares = f"{right:5d} ({right / n:5.1%}) {same:5d} ({same / n:5.1%})"
        print(f"{'nimbus':10s} {chars:5d} {shares} {1e6 * seconds / n:8.1f}")
        peer = _peer(samples, chars)
        if peer is None:
            print("py3langid not installed (pip install -e '.[bench]'): no peer figures")
            continue
        found_peer, seconds_peer = peer
        right_peer = sum(f == t for f, t in zip(found_peer, truth, strict=True))
        print(
            f"{'py3langid':10s} {chars:5d} {right_peer:5d} ({right_peer / n:5.1%}) {'':12s} "
            f"{1e6 * seconds_peer / n:8.1f}   nimbus/py3langid CPU {seconds / seconds_peer:.3f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
