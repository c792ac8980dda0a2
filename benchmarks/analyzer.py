"""The analyzer's speed where it is hot: the index job's ``PostingBuffer`` (rough tokens, the
word regex, stop lists and stemmers per distinct token and language, then numpy), in
words per second, on two corpora of real text:

- English: the first ``--docs`` documents of the benchmark corpus (``benchmarks.textcorpus``:
  Wikipedia, Cranfield and PDF sentences), or Cranfield alone when no corpus is given;
- many languages: the Universal Declaration of Human Rights in the 200-odd languages of
  ``data/langid/udhr.jsonl``, each record with its language, repeated ``--udhr-repeat`` times.

Words are the whitespace-separated words of the input (the same count whatever the analyzer
does), over the process's CPU time (the work is single-threaded; on a shared machine wall
time mostly measures the neighbours), best of ``--rounds`` runs. Only the public
``PostingBuffer`` and ``Record`` are used, so the same script times an older checkout
(``PYTHONPATH=<checkout>``).

    python -m benchmarks.analyzer --corpus var/bench/corpus-100000 --docs 20000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mapreduce.postings import PostingBuffer
from services.storage.formats.records import Record

DATA = Path(__file__).resolve().parents[1] / "data"
FLUSH = 2_000  # records per drain, about a record block


def _record(num: int, title: str, text: str, lang: str) -> Record:
    return Record(num, f"https://example.org/{num}", "", "", "text/html", title=title, text=text, lang=lang)


def english(corpus: Path | None, docs: int) -> list[Record]:
    path = corpus / "docs.jsonl" if corpus else DATA / "ir/cranfield/docs.jsonl"
    out = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= docs:
                break
            row = json.loads(line)
            out.append(_record(i, row.get("title", ""), row["text"], "en"))
    return out


def many_languages(repeat: int) -> list[Record]:
    rows = [json.loads(line) for line in (DATA / "langid/udhr.jsonl").open(encoding="utf-8")]
    return [_record(i, "", row["text"], row["lang"]) for i, row in enumerate(rows * repeat)]


def words_per_second(records: list[Record], rounds: int) -> tuple[int, float]:
    words = sum(len(r.title.split()) + len(r.text.split()) for r in records)
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        buffer = PostingBuffer()
        for i, record in enumerate(records, 1):
            buffer.add(record)
            if i % FLUSH == 0:
                buffer.drain()
        buffer.drain()
        best = min(best, time.process_time() - start)
    return words, words / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.analyzer", description=__doc__)
    parser.add_argument("--corpus", type=Path, help="a benchmarks.textcorpus folder (default: Cranfield)")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--udhr-repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for name, records in (
        ("english", english(args.corpus, args.docs)),
        ("udhr", many_languages(args.udhr_repeat)),
    ):
        words, rate = words_per_second(records, args.rounds)
        print(f"{name}: {len(records)} records, {words} words, {rate:,.0f} words/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
