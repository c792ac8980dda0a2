"""Ranking quality on Cranfield: Nimbus against ready-made BM25 rankers, and two ablations.

    .venv/bin/python -m benchmarks.ranking_peers [--collection data/ir/cranfield] [--skip-nimbus]

The collection is read with the repository's loader (``services.eval.collection``); every run
is ``--depth`` documents a query (1,000, as ``nimbus eval``), is written as a TREC run under
``--runs`` (for ``nimbus compare``) and is scored by the code ``nimbus eval`` uses
(``services.eval.metrics.evaluate``: ir-measures, relevance >= 1 counts as relevant).

* **bm25s** (k1 1.2, b 0.75, its Lucene variant) over title + text, with its own tokenizer
  (``bm25s.tokenize``), with and without the repository's stop words
  (``services/text/analysis/stopwords_en.txt``) and PyStemmer's English stemmer.
* **tantivy**, its BM25 (k1 1.2, b 0.75 fixed) over a title and a body field, the query through
  its query parser (OR of the words): analyzer ``default``, ``en_stem``, and the same with the
  repository's stop words, with and without its English stemmer.
* **Nimbus**: ``nimbus eval`` itself (``services.eval.run.run_eval``, inline MapReduce runner,
  state in a temporary directory): BM25F over title and body, RM3 feedback.

Ablations, each against the configuration it changes (numbered in the ``base`` column), with
the paired randomization test of ``nimbus compare``:

* repeated query terms: bm25s scores a query term once per occurrence, and the ablation once
  per distinct term. tantivy's query parser drops a word repeated as written but keeps a term
  that two written forms share ("chemical", "chemically"), so its two ablation rows build the
  parser's query by hand, each term once, then every occurrence. Nimbus counts occurrences
  (``qw_t``); its ablation runs ``nimbus eval`` on the queries with each later occurrence of a
  term left out (``distinct_terms_query``).
* a title weighted twice: tantivy's field boost; bm25s on title + title + text.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.tables import format_table
from services.eval.collection import Collection, load_collection
from services.eval.compare import compare
from services.eval.metrics import Run, evaluate, write_trec_run
from services.storage.documents import SourceDoc
from services.text.analysis.analyze import stopwords, surface_tokens, terms_of

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 1000  # nimbus eval's default: trec_eval's customary depth
K1, B = 1.2, 0.75
_TANTIVY_WORD = re.compile(r"[^\W_]+")  # what tantivy's simple tokenizer keeps (alphanumeric runs)
EVERY, ONCE, PARSER = "every", "once", "parser"  # Config.query


@dataclass(frozen=True)
class Config:
    name: str
    stem: bool
    stop: bool
    # How the query's terms count: EVERY occurrence (bm25s's own way), each distinct term ONCE,
    # or as tantivy's query PARSER builds the query (see tantivy_runs).
    query: str = EVERY
    title_weight: int = 1
    base: str = ""  # for an ablation: the configuration it changes


@dataclass(frozen=True)
class Scored:
    name: str
    metrics: dict[str, float]
    run_path: Path  # the TREC run, for `nimbus compare`
    base: str = ""
    seconds: float = 0.0  # CPU time of the index build and the queries


def distinct(tokens: list[str]) -> list[str]:
    """Each token once, in the order of its first occurrence."""
    return list(dict.fromkeys(tokens))


def weighted_text(doc: SourceDoc, title_weight: int) -> str:
    """The document as one text, its title repeated ``title_weight`` times before the body."""
    return " ".join([doc.title] * title_weight + [doc.text])


def top(scores: dict[str, float] | list[tuple[str, float]], depth: int) -> list[tuple[str, float]]:
    """The ``depth`` best (doc id, score) pairs with a positive score, best first (ties by id)."""
    pairs = scores.items() if isinstance(scores, dict) else scores
    ranked = sorted(((d, s) for d, s in pairs if s > 0), key=lambda pair: (-pair[1], pair[0]))
    return ranked[:depth]


# --- bm25s ---------------------------------------------------------------------------------


def bm25s_runs(collection: Collection, configs: list[Config], depth: int) -> Iterator[tuple[Config, Run]]:
    import bm25s
    import numpy as np
    import Stemmer

    docs = list(collection.docs())
    ids = [doc.id for doc in docs]
    stop_list = sorted(stopwords())
    stemmer = Stemmer.Stemmer("english")
    for config in configs:
        options = {"stopwords": stop_list if config.stop else [], "stemmer": stemmer if config.stem else None}
        texts = [weighted_text(doc, config.title_weight) for doc in docs]
        corpus = bm25s.tokenize(texts, return_ids=False, show_progress=False, **options)
        retriever = bm25s.BM25(k1=K1, b=B)
        retriever.index(corpus, show_progress=False)
        queries = bm25s.tokenize(
            [q.text for q in collection.queries], return_ids=False, show_progress=False, **options
        )
        run: dict[str, list[tuple[str, float]]] = {}
        for query, tokens in zip(collection.queries, queries, strict=True):
            tokens = [t for t in tokens if t in retriever.vocab_dict]
            tokens = distinct(tokens) if config.query == ONCE else tokens
            if not tokens:
                run[query.id] = []
                continue
            scores = retriever.get_scores(tokens)
            best = np.argsort(-scores, kind="stable")[:depth]
            run[query.id] = top([(ids[i], float(scores[i])) for i in best], depth)
        yield config, run


# --- tantivy -------------------------------------------------------------------------------


def tantivy_runs(collection: Collection, configs: list[Config], depth: int) -> Iterator[tuple[Config, Run]]:
    import tantivy

    docs = list(collection.docs())
    for config in configs:
        builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        builder = builder.filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
        if config.stop:
            builder = builder.filter(tantivy.Filter.custom_stopword(sorted(stopwords())))
        if config.stem:
            builder = builder.filter(tantivy.Filter.stemmer("english"))
        analyzer = builder.build()
        schema_builder = tantivy.SchemaBuilder()
        for field in ("title", "body"):
            schema_builder.add_text_field(field, stored=False, tokenizer_name="words")
        schema_builder.add_text_field("id", stored=True, tokenizer_name="raw")
        schema = schema_builder.build()
        index = tantivy.Index(schema)  # in memory
        index.register_tokenizer("words", analyzer)
        writer = index.writer(heap_size=100_000_000, num_threads=1)
        for doc in docs:
            writer.add_document(tantivy.Document(title=doc.title, body=doc.text, id=doc.id))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()
        boosts = {"title": float(config.title_weight)} if config.title_weight != 1 else {}
        run: dict[str, list[tuple[str, float]]] = {}
        for query in collection.queries:
            if config.query == PARSER:  # the words alone, so "-" or "?" are not operators
                words = " ".join(_TANTIVY_WORD.findall(query.text.lower()))
                parsed = index.parse_query(words, ["title", "body"], field_boosts=boosts)
            else:  # the query the parser builds, one Should clause a term and field, made by hand
                terms = analyzer.analyze(query.text)
                clauses = [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, field, term))
                    for term in (distinct(terms) if config.query == ONCE else terms)
                    for field in ("title", "body")
                ]
                parsed = tantivy.Query.boolean_query(clauses)
            hits = searcher.search(parsed, depth).hits
            run[query.id] = top([(searcher.doc(address)["id"][0], score) for score, address in hits], depth)
        yield config, run


# --- Nimbus --------------------------------------------------------------------------------


def distinct_terms_query(text: str) -> str:
    """The query's words with each later occurrence of an index term left out (Nimbus's
    analyzer decides what is the same term: "wing" and "wings" are)."""
    surfaces = surface_tokens(text)
    seen: set[str] = set()
    kept = []
    for surface, term in zip(surfaces, terms_of(surfaces), strict=True):
        if term and term in seen:
            continue
        seen.add(term)
        kept.append(surface)
    return " ".join(kept)


def nimbus_metrics(
    root: Path, depth: int, run_path: Path, rewrite: Callable[[str], str] | None = None
) -> dict[str, float]:
    """``nimbus eval ROOT --run RUN_PATH`` with the inline runner, its state in a temporary
    directory; with ``rewrite``, on a copy of the collection whose query texts are rewritten."""
    from services.config import Settings
    from services.eval.run import run_eval, state_settings

    with tempfile.TemporaryDirectory(prefix="nimbus-ranking-peers-") as work:
        if rewrite is not None:
            root = _rewritten_queries(root, Path(work) / root.resolve().name, rewrite)
        inline = Settings.from_env({}).with_overrides(mr_runner="inline")  # as `nimbus eval` runs it
        settings = state_settings(inline, Path(work) / "state")
        return run_eval(root, settings, run_path=run_path, depth=depth, progress=False)


def _rewritten_queries(root: Path, copy: Path, rewrite: Callable[[str], str]) -> Path:
    """``copy``: the collection at ``root`` (its files linked) with rewritten query texts."""
    copy.mkdir()
    for source in root.iterdir():
        if source.is_file() and source.name != "queries.jsonl":
            (copy / source.name).symlink_to(source.resolve())
    with (root / "queries.jsonl").open(encoding="utf-8") as src, (copy / "queries.jsonl").open("w") as out:
        for line in src:
            if line.strip():
                query = json.loads(line)
                out.write(json.dumps({**query, "text": rewrite(query["text"])}) + "\n")
    return copy


_BM25S_BASE = "bm25s, stem + stop"
BM25S = [
    Config("bm25s", stem=False, stop=False),
    Config("bm25s, stop", stem=False, stop=True),
    Config("bm25s, stem", stem=True, stop=False),
    Config(_BM25S_BASE, stem=True, stop=True),
    Config(f"{_BM25S_BASE}, each query term once", True, True, query=ONCE, base=_BM25S_BASE),
    Config(f"{_BM25S_BASE}, title x2 (title + title + text)", True, True, title_weight=2, base=_BM25S_BASE),
]
_TANTIVY_BASE = "tantivy, stem + stop"
_TANTIVY_ONCE = f"{_TANTIVY_BASE}, each query term once"
TANTIVY = [
    Config("tantivy default", stem=False, stop=False, query=PARSER),
    Config("tantivy, stop", stem=False, stop=True, query=PARSER),
    Config("tantivy en_stem", stem=True, stop=False, query=PARSER),
    Config(_TANTIVY_BASE, stem=True, stop=True, query=PARSER),
    Config(_TANTIVY_ONCE, True, True, query=ONCE, base=_TANTIVY_BASE),
    Config(f"{_TANTIVY_BASE}, every occurrence of a query term", True, True, base=_TANTIVY_ONCE),
    Config(f"{_TANTIVY_BASE}, title boost x2", True, True, query=PARSER, title_weight=2, base=_TANTIVY_BASE),
]


NIMBUS = [
    ("nimbus eval", None, ""),
    ("nimbus eval, each query term once", distinct_terms_query, "nimbus eval"),
]


def table(results: list[Scored], qrels: dict[str, dict[str, int]]) -> list[str]:
    """MAP and nDCG@10 of each configuration, numbered; for an ablation, the number of the
    configuration it changes, its MAP change from it, on how many queries it did better and
    worse, and the paired randomization test's p-value."""
    number = {r.name: str(i) for i, r in enumerate(results, 1)}
    by_name = {r.name: r for r in results}
    rows = []
    for r in results:
        change = ["", "", "", ""]
        if r.base in by_name:
            paired = compare(by_name[r.base].run_path, r.run_path, qrels, "MAP")
            p = paired.randomization_p
            change = [
                number[r.base],
                f"{paired.mean_b - paired.mean_a:+.4f}",
                f"{paired.better}/{paired.worse}",
                f"{p:.3f}" if p >= 0.001 else "<0.001",
            ]
        figures = [f"{r.metrics['MAP']:.4f}", f"{r.metrics['nDCG@10']:.4f}", *change, f"{r.seconds:.1f}"]
        rows.append([number[r.name], r.name, *figures])
    headers = ["#", "configuration", "MAP", "nDCG@10", "base", "MAP - base", "better/worse", "p", "CPU s"]
    return format_table(headers, rows)


def best_ready_made(results: list[Scored]) -> Scored | None:
    """The best MAP among the peers' configurations (ablations and Nimbus left out)."""
    peers = [r for r in results if not r.base and not r.name.startswith("nimbus")]
    return max(peers, key=lambda r: r.metrics["MAP"]) if peers else None


def slug(name: str) -> str:
    """A file name for a configuration's run: ``bm25s, stem + stop`` -> ``bm25s-stem-stop``."""
    return "-".join(re.findall(r"[a-z0-9]+", name.lower()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", type=Path, default=ROOT / "data" / "ir" / "cranfield")
    p.add_argument("--depth", type=int, default=DEPTH)
    p.add_argument("--runs", type=Path, default=ROOT / "var" / "bench" / "ranking-peers", help="TREC runs")
    p.add_argument("--skip-nimbus", action="store_true", help="the peers only (no ingest and index build)")
    args = p.parse_args(argv)
    collection = load_collection(args.collection)
    args.runs.mkdir(parents=True, exist_ok=True)
    print(
        f"{args.collection}: {len(collection.doc_ids):,} documents, {len(collection.judged_queries)} judged "
        f"queries, depth {args.depth}; runs in {args.runs}",
        flush=True,
    )
    results: list[Scored] = []
    peers: list[tuple[str, Callable[..., Iterator[tuple[Config, Run]]], list[Config]]] = [
        ("bm25s", bm25s_runs, BM25S),
        ("tantivy", tantivy_runs, TANTIVY),
    ]
    for library, runs, configs in peers:
        try:
            __import__(library)
        except ImportError:
            print(f"{library} not installed (pip install -e '.[bench]'): no figures for it")
            continue
        started = time.process_time()
        for config, run in runs(collection, configs, args.depth):
            seconds, started = time.process_time() - started, time.process_time()
            path = write_trec_run(run, args.runs / f"{slug(config.name)}.trec", tag=slug(config.name))
            results.append(Scored(config.name, evaluate(run, collection.qrels), path, config.base, seconds))
            print(f"  {config.name}: MAP {results[-1].metrics['MAP']:.4f}", file=sys.stderr, flush=True)
    for name, rewrite, base in [] if args.skip_nimbus else NIMBUS:
        started = time.process_time()
        path = args.runs / f"{slug(name)}.trec"
        metrics = nimbus_metrics(args.collection, args.depth, path, rewrite)
        results.append(Scored(name, metrics, path, base, time.process_time() - started))
        print(f"  {name}: MAP {metrics['MAP']:.4f}", file=sys.stderr, flush=True)
    print()
    for line in table(results, collection.qrels):
        print(line)
    best = best_ready_made(results)
    if best is not None:
        print(f"\nbest ready-made configuration: {best.name}, MAP {best.metrics['MAP']:.4f}")
    print(
        "better/worse: queries whose average precision the ablation raised/lowered; p: two-sided paired "
        "randomization test on MAP (services.eval.compare). CPU s: index build and queries."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
