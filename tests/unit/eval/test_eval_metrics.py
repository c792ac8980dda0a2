"""Collections load with clear errors; metrics come from ir-measures on known cases."""

from __future__ import annotations

import json

import pytest

from services.eval.collection import CollectionError, load_collection
from services.eval.metrics import evaluate, format_metrics, write_trec_run


def _write(root, docs, queries, qrels_lines):
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\n" + "".join(qrels_lines))


def test_hand_checked_measures():
    qrels = {"1": {"a": 2, "b": 1, "c": 0}, "2": {"d": 1}}
    run = {"1": [("c", 3.0), ("a", 2.0), ("x", 1.5), ("b", 1.0)], "2": []}
    m = evaluate(run, qrels)
    # q1: relevant a (rank 2), b (rank 4): AP = (1/2 + 2/4) / 2 = 0.5; q2 has no results: 0.
    assert m["MAP"] == pytest.approx(0.25)
    assert m["MRR"] == pytest.approx(0.25)  # (1/2 + 0) / 2
    assert m["P@10"] == pytest.approx(0.1)  # (2/10 + 0) / 2
    assert m["Recall@100"] == pytest.approx(0.5)
    assert 0 < m["nDCG@10"] < 0.5
    assert list(format_metrics(m))[0] == "MAP 0.2500"


def test_trec_run_format(tmp_path):
    path = write_trec_run({"10": [("d2", 1.5)], "2": [("d1", 2.0), ("d3", 1.0)]}, tmp_path / "run.txt")
    assert path.read_text().splitlines() == [
        "2 Q0 d1 1 2.000000 nimbus",
        "2 Q0 d3 2 1.000000 nimbus",
        "10 Q0 d2 1 1.500000 nimbus",
    ]


def test_cranfield_loads(sample_data):
    c = load_collection(sample_data / "ir" / "cranfield")
    assert len(c.queries) == 225 and len(c.doc_ids) == 1400
    assert len(c.judged_queries) == 225
    assert sum(len(v) for v in c.qrels.values()) == 1837


def test_bad_collections_name_file_and_line(tmp_path):
    docs = [{"id": "1", "title": "t", "text": "x"}]
    queries = [{"id": "1", "text": "q"}]
    _write(tmp_path / "a", docs, queries, ["1\t9\t1\n"])
    with pytest.raises(CollectionError, match=r"qrels.tsv:2: unknown document id '9'"):
        load_collection(tmp_path / "a")
    _write(tmp_path / "b", docs * 2, queries, [])
    with pytest.raises(CollectionError, match="duplicate document id"):
        load_collection(tmp_path / "b")
    _write(tmp_path / "c", docs, queries, [])
    (tmp_path / "c" / "qrels.tsv").write_text("1 184 2\n")  # raw Cranfield: ids not renumbered
    with pytest.raises(CollectionError, match="unknown document id '184': 1 of 1 judgments"):
        load_collection(tmp_path / "c")  # read as headerless qrels, then refused: another corpus's
    (tmp_path / "c" / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\n")  # a header alone
    with pytest.raises(CollectionError, match="no judgments below the header"):
        load_collection(tmp_path / "c")
    (tmp_path / "c" / "qrels.tsv").write_text("qid docno\n")
    with pytest.raises(CollectionError, match="expected the header"):
        load_collection(tmp_path / "c")
    (tmp_path / "c" / "qrels.tsv").write_text("1 0 1 1\n1 0 7\n")
    with pytest.raises(CollectionError, match=r"qrels.tsv:2: expected 4 fields, found 3"):
        load_collection(tmp_path / "c")
    with pytest.raises(CollectionError, match="not found"):
        load_collection(tmp_path / "missing")


def test_bad_json_lines_name_the_file_and_the_byte(tmp_path):
    """The archives' JSON-lines reader reads the collection: its errors name file and offset."""
    docs = [{"id": "1", "title": "t", "text": "x"}]
    _write(tmp_path / "a", docs, [{"id": "1", "text": "q"}], ["1\t1\t1\n"])
    (tmp_path / "a" / "docs.jsonl").write_text('{"id": "1", "text": "x"}\n{"id": "2", "text": \n')
    with pytest.raises(CollectionError, match=r"docs.jsonl at byte 25: not JSON"):
        load_collection(tmp_path / "a")
    (tmp_path / "a" / "docs.jsonl").write_text('{"id": "1", "text": "x"}\n["2"]\n')
    with pytest.raises(CollectionError, match=r'docs.jsonl at byte 25: expected an object with an "id"'):
        load_collection(tmp_path / "a")
    (tmp_path / "a" / "docs.jsonl").write_text('{"id": "1", "text": "x"}\n')
    (tmp_path / "a" / "queries.jsonl").write_text('{"id": "1", "text": "q"}\n{"id": "1", "text": "r"}\n')
    with pytest.raises(CollectionError, match=r"queries.jsonl at byte 25: duplicate query id '1'"):
        load_collection(tmp_path / "a")


def test_trec_qrels_lines_are_read_as_trec_eval_reads_them(tmp_path):
    docs = [{"id": "d1", "title": "t", "text": "x"}, {"id": "d2", "title": "t", "text": "y"}]
    queries = [{"id": "401", "text": "q"}, {"id": "402", "text": "r"}]
    _write(tmp_path / "trec", docs, queries, [])
    (tmp_path / "trec" / "qrels.tsv").write_text("401 0 d1 1\n401 0 d2 0\n\n402\t0\td2\t2\n")
    assert load_collection(tmp_path / "trec").qrels == {"401": {"d1": 1, "d2": 0}, "402": {"d2": 2}}


def test_a_beir_collection_loads_as_distributed(tmp_path):
    """BEIR's layout (SciFact, NFCorpus, TREC-COVID, ...): corpus.jsonl and queries.jsonl
    keyed by "_id", judgments in qrels/test.tsv under the header query-id, corpus-id, score."""
    root = tmp_path / "scifact"
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": "4983", "title": "Microstructural development", "text": "Alterations of the brain."}]
    corpus.append(
        {"_id": "5836", "title": "Induction of myelodysplasia", "text": "Myelodysplastic syndromes."}
    )
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    queries = [
        {"_id": "1", "text": "0-dimensional biomaterials show inductive properties."},
        {"_id": "3", "text": "x"},
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t4983\t1\n")
    c = load_collection(root)
    assert c.doc_ids == {"4983", "5836"} and [q.id for q in c.judged_queries] == ["1"]
    assert c.qrels == {"1": {"4983": 1}}
    assert [(d.id, d.title) for d in c.docs()] == [
        ("4983", "Microstructural development"),
        ("5836", corpus[1]["title"]),
    ]
