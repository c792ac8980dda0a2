"""The ranking benchmark's query and document rewrites and its table (benchmarks/ranking_peers.py)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.ranking_peers import (
    Scored,
    best_ready_made,
    distinct,
    distinct_terms_query,
    slug,
    table,
    top,
    weighted_text,
)
from services.eval.metrics import write_trec_run
from services.storage.documents import SourceDoc
from services.text.analysis.analyze import analyze


def test_distinct_keeps_first_occurrences_in_order() -> None:
    assert distinct(["heat", "flow", "heat", "wing", "flow"]) == ["heat", "flow", "wing"]


def test_distinct_terms_query_leaves_out_later_occurrences_of_a_term() -> None:
    query = "What chemical reactions in chemically reacting flows, and which flow?"
    rewritten = distinct_terms_query(query)
    # "chemically" and "flow" stem to terms already in the query; stop words stay as written.
    assert rewritten == "what chemical reactions in reacting flows and which"
    assert analyze(rewritten) == distinct(analyze(query))


def test_weighted_text_repeats_the_title() -> None:
    doc = SourceDoc("1", "Wing flutter", "The flutter of a wing.")
    assert weighted_text(doc, 1) == "Wing flutter The flutter of a wing."
    assert weighted_text(doc, 2) == "Wing flutter Wing flutter The flutter of a wing."


def test_top_keeps_positive_scores_best_first_ties_by_id() -> None:
    assert top({"3": 1.0, "1": 2.0, "2": 1.0, "4": 0.0}, 10) == [("1", 2.0), ("2", 1.0), ("3", 1.0)]
    assert top([("a", 3.0), ("b", 2.0), ("c", 1.0)], 2) == [("a", 3.0), ("b", 2.0)]


def test_slug_names_a_run_file() -> None:
    assert slug("bm25s, stem + stop, title x2 (title + text)") == "bm25s-stem-stop-title-x2-title-text"


def _scored(tmp_path: Path, name: str, rankings: dict[str, list[str]], base: str = "") -> Scored:
    run = {qid: [(d, float(10 - i)) for i, d in enumerate(docs)] for qid, docs in rankings.items()}
    path = write_trec_run(run, tmp_path / f"{slug(name)}.trec")
    return Scored(name, {"MAP": 0.0, "nDCG@10": 0.0}, path, base)


def test_table_compares_an_ablation_with_its_base_query_by_query(tmp_path: Path) -> None:
    qrels = {"1": {"a": 1, "b": 0}, "2": {"a": 1}}
    base = _scored(tmp_path, "bm25s", {"1": ["b", "a"], "2": ["a"]})  # AP 0.5 and 1
    ablation = _scored(tmp_path, "bm25s, once", {"1": ["a", "b"], "2": ["a"]}, base="bm25s")  # AP 1 and 1
    lines = table([base, ablation], qrels)
    headers = [c.strip() for c in lines[0].split("|")[1:-1]]
    assert headers[4:7] == ["base", "MAP - base", "better/worse"]
    cells = [c.strip() for c in lines[3].split("|")[1:-1]]
    assert cells[:2] == ["2", "bm25s, once"]
    assert cells[4:7] == ["1", "+0.2500", "1/0"]  # against #1: query 1 better, query 2 equal


def test_the_best_ready_made_configuration_leaves_out_ablations_and_nimbus(tmp_path: Path) -> None:
    results = [
        Scored("bm25s", {"MAP": 0.30}, tmp_path),
        Scored("bm25s, once", {"MAP": 0.40}, tmp_path, base="bm25s"),
        Scored("tantivy", {"MAP": 0.31}, tmp_path),
        Scored("nimbus eval", {"MAP": 0.35}, tmp_path),
    ]
    best = best_ready_made(results)
    assert best is not None and best.name == "tantivy"
    assert best_ready_made(results[3:]) is None
