"""A large real-text corpus for index and query benchmarks, rebuilt from the sample data in data/.

No collection of 100,000 real documents ships with the sample data, and
nothing can be downloaded, so the benchmark documents are assembled from
real sentences: the Wikipedia articles of the MediaWiki dump, the Cranfield
abstracts and the text of the sample PDFs (~50,000 distinct sentences). Each
document is 3 to 40 consecutive sentences from one source text, started at a
random place, so term statistics, document lengths and co-occurrence follow
real prose (Zipfian vocabulary, topical coherence), not a random word
generator. Queries are 2 to 4 content words taken from one document, as a user
who has seen a page would type them.

The sample data holds about 16,000 sentences, so at a million documents of 3 to 40
consecutive ones the windows repeat: most of that corpus's documents are byte-identical to
another, and most of the rest near-duplicates (docs/benchmarks.md, "Issue 31: a million
documents"). ``--distinct`` draws each document's sentences from a neighbourhood of the
sentences in their order instead (3 to 40 of the ``3n + 10`` around a random place, kept in
order; ``scattered_indices``), so a topic still holds a document together and the words
follow the same prose, while two documents share a sentence set only by chance; one whose
text was written already is drawn again. The default stays the contiguous window: every
earlier figure at 100,000 documents was measured on its bytes.

    python -m benchmarks.textcorpus --docs 100000 --queries 500 --out var/bench/corpus
    python -m benchmarks.textcorpus --docs 1000000 --distinct --out var/bench/corpus-1000000-distinct
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path

from benchmarks.wikidump import read_dump
from services.demo.sampleweb import PDFS, WIKI_DUMP

DATA = Path(__file__).resolve().parents[1] / "data"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def source_texts(data: Path) -> list[list[str]]:
    """Each source text as its list of sentences."""
    import wikitextparser as wtp

    from services.text.extract.pdf import parse_pdf

    texts: list[str] = []
    articles, _redirects = read_dump(data / WIKI_DUMP)
    for wikitext in articles.values():
        plain = wtp.parse(re.sub(r"<ref[^>]*>.*?</ref>|<ref[^>]*/>", "", wikitext, flags=re.S))
        texts.append(plain.plain_text(replace_templates=True, replace_tables=True))
    with (data / "ir/cranfield/docs.jsonl").open(encoding="utf-8") as fh:
        texts += [json.loads(line)["text"] for line in fh]
    texts += [parse_pdf((data / p).read_bytes(), p).text for p in PDFS]
    out = []
    for text in texts:
        sentences = [" ".join(s.split()) for s in _SENTENCE.split(text)]
        sentences = [s for s in sentences if 20 <= len(s) <= 600 and not s.startswith(("=", "|", "{"))]
        if sentences:
            out.append(sentences)
    return out


def scattered_indices(rng: random.Random, total: int) -> list[int]:
    """A ``--distinct`` document's sentences: ``n`` (3 to 40) of the ``3n + 10`` sentences
    around a random place of the ``total`` in their order, ascending. The neighbourhood keeps
    the topic (a source's sentences are consecutive), and the choice of ``n`` of ``3n + 10``
    makes two documents alike only by chance: two at the same place share a third of their
    sentences on average, far below near-duplicate folding's 0.9 resemblance of words."""
    n = min(total, rng.randint(3, 40))
    width = min(total, 3 * n + 10)
    start = min(max(0, rng.randrange(total) - width // 2), total - width)
    return sorted(rng.sample(range(start, start + width), n))


def build(
    data: Path, docs: int, queries: int, out: Path, seed: int = 42, *, distinct: bool = False
) -> tuple[int, int]:
    """Write ``docs`` documents and up to ``queries`` queries to ``out`` (docs.jsonl,
    queries.jsonl). ``distinct``: sentences scattered over a neighbourhood, no two documents'
    texts alike (``scattered_indices``); else a window of consecutive sentences of one source
    (the default, the same bytes as every earlier run)."""
    from services.text.analysis.analyze import stopwords

    rng = random.Random(seed)
    sources = source_texts(data)
    weights = [len(s) for s in sources]
    every = [sentence for sentences in sources for sentence in sentences]  # in source order
    seen: set[bytes] = set()  # --distinct: digests of the texts written
    out.mkdir(parents=True, exist_ok=True)
    stop = stopwords()
    written_queries = 0
    with (
        (out / "docs.jsonl").open("w", encoding="utf-8") as dfh,
        (out / "queries.jsonl").open("w", encoding="utf-8") as qfh,
    ):
        query_every = max(1, docs // queries)
        for i in range(docs):
            if distinct:
                while True:
                    picked_sentences = [every[j] for j in scattered_indices(rng, len(every))]
                    body = " ".join(picked_sentences)
                    digest = hashlib.blake2b(body.encode("utf-8"), digest_size=12).digest()
                    if digest not in seen:
                        seen.add(digest)
                        break
                title = " ".join(picked_sentences[0].split()[:8])
            else:
                sentences = rng.choices(sources, weights)[0]
                n = min(len(sentences), rng.randint(3, 40))
                start = rng.randrange(0, len(sentences) - n + 1)
                body = " ".join(sentences[start : start + n])
                title = " ".join(sentences[start].split()[:8])
            dfh.write(json.dumps({"id": str(i), "title": title, "text": body}) + "\n")
            if i % query_every == 0 and written_queries < queries:
                words = sorted({w.lower() for w in re.findall(r"[A-Za-z]{4,}", body)} - stop)
                if len(words) >= 4:
                    picked = rng.sample(words, rng.randint(2, 4))
                    qfh.write(json.dumps({"id": str(written_queries), "text": " ".join(picked)}) + "\n")
                    written_queries += 1
            if docs >= 200_000 and (i + 1) % 100_000 == 0:
                print(f"textcorpus: {i + 1} of {docs} documents", file=sys.stderr, flush=True)
    return docs, written_queries


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="build the benchmark text corpus")
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--out", type=Path, default=Path("var/bench/corpus"))
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument(
        "--distinct",
        action="store_true",
        help="sentences scattered over a neighbourhood, no two documents alike (for 1M and more)",
    )
    args = p.parse_args(argv)
    docs, queries = build(args.data, args.docs, args.queries, args.out, distinct=args.distinct)
    print(f"wrote {docs} documents and {queries} queries to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
