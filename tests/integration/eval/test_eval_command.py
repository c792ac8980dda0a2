"""`nimbus eval DIR`: a tiny judged collection through an archive crawl, the MapReduce build
and the search code, scored by ir-measures; and bad collections refused with a clear message."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest
from ir_measures import AP, RR, P, R, nDCG
from sqlalchemy import func, select

from services.cli import main
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import ArchiveBundle, Document

REPO = Path(__file__).resolve().parents[3]

# Five topics with words of their own; six documents each, the first three the most relevant.
TOPICS = {
    "1": ("propeller slipstream", "propeller blades in the slipstream behind a wing"),
    "2": ("hypersonic heating", "hypersonic flight and aerodynamic heating of the nose"),
    "3": ("boundary layer transition", "boundary layer transition from laminar flow"),
    "4": ("panel flutter", "flutter of thin panels in supersonic flow"),
    "5": ("shock tube", "shock tube experiments on ionized gas"),
}
FILLER = ["measurements", "theory", "results", "analysis", "method", "data"]
METRIC_LINE = re.compile(r"^(MAP|nDCG@10|P@10|Recall@100|MRR) (\d\.\d{4})$")


def write_collection(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    docs, queries, qrels = [], [], ["query_id\tdoc_id\trelevance"]
    for t, (query, sentence) in TOPICS.items():
        queries.append({"id": t, "text": f"{query}?"})
        for i in range(6):
            doc_id = f"{t}{i:02d}"
            docs.append({"id": doc_id, "title": f"{FILLER[i]} {i}", "text": f"{sentence}. {FILLER[i]}."})
            qrels.append(f"{t}\t{doc_id}\t{2 if i < 3 else 1}")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels.tsv").write_text("\n".join(qrels) + "\n")
    return root


@pytest.fixture
def eval_env(tmp_path, monkeypatch):
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("NIMBUS_MR_RUNNER", raising=False)
    return tmp_path


def _metrics(out: str) -> dict[str, float]:
    found = [METRIC_LINE.match(line) for line in out.splitlines()]
    return {m.group(1): float(m.group(2)) for m in found if m}


def _qrels(path: Path) -> list[ir_measures.Qrel]:
    lines = path.read_text().splitlines()[1:]
    return [ir_measures.Qrel(*line.split("\t")[:2], int(line.split("\t")[2])) for line in lines]


def test_eval_prints_the_five_measures_of_its_trec_run(eval_env, capsys):
    root = write_collection(eval_env / "tiny")
    state, run = eval_env / "state", eval_env / "runs" / "tiny.trec"
    assert main(["eval", str(root), "--state", str(state), "--run", str(run)]) == 0
    out, err = capsys.readouterr()

    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["MAP", "nDCG@10", "P@10", "Recall@100", "MRR"]
    assert all(METRIC_LINE.match(line) for line in lines[:5])
    assert lines[5] == f"run file {run}"
    metrics = _metrics(out)
    assert all(0.0 <= v <= 1.0 for v in metrics.values())
    # The ranking is obvious: each query's words occur in its six documents only.
    assert metrics["MAP"] >= 0.9 and metrics["Recall@100"] == 1.0 and metrics["MRR"] == 1.0
    assert metrics["P@10"] == pytest.approx(0.6)
    assert "runner inline" in err and "docs/s" in err and "searched 5 queries" in err

    # The run file: six columns, ranks from 1, scores not increasing, only collection ids.
    rows = [line.split() for line in run.read_text().splitlines()]
    assert rows and all(len(r) == 6 and r[1] == "Q0" and r[5] == "nimbus" for r in rows)
    doc_ids = {f"{t}{i:02d}" for t in TOPICS for i in range(6)}
    for qid in TOPICS:
        mine = [r for r in rows if r[0] == qid]
        assert [int(r[3]) for r in mine] == list(range(1, len(mine) + 1))
        scores = [float(r[4]) for r in mine]
        assert scores == sorted(scores, reverse=True)
        assert {r[2] for r in mine} <= doc_ids

    # ir-measures on the written file gives the printed figures.
    measures = {"MAP": AP, "nDCG@10": nDCG @ 10, "P@10": P @ 10, "Recall@100": R @ 100, "MRR": RR}
    expected = ir_measures.calc_aggregate(
        list(measures.values()), _qrels(root / "qrels.tsv"), list(ir_measures.read_trec_run(str(run)))
    )
    for name, measure in measures.items():
        assert metrics[name] == pytest.approx(expected[measure], abs=5e-5), name


def test_queries_are_read_as_prose_not_as_the_search_boxs_language(eval_env, capsys):
    """Collections' queries hold quotes, dashes and capitals written for people: "-dash"
    (Cranfield's mark for a dash) must not exclude the documents that contain "dash",
    and a quoted name is no phrase constraint."""
    root = write_collection(eval_env / "prose")
    queries = [
        {"id": "1", "text": "propeller slipstream -dash experiments?"},
        {"id": "2", "text": '"heating hypersonic" OR NOT nose'},
        *({"id": t, "text": f"{query}?"} for t, (query, _) in TOPICS.items() if t not in ("1", "2")),
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    docs = [json.loads(line) for line in (root / "docs.jsonl").read_text().splitlines()]
    docs[0]["text"] += " The slipstream -dash a wake -dash was measured."  # a relevant document with "dash"
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    run = eval_env / "prose.trec"
    assert main(["eval", str(root), "--state", str(eval_env / "state"), "--run", str(run)]) == 0
    found = {(r.split()[0], r.split()[2]) for r in run.read_text().splitlines()}
    assert ("1", "100") in found  # not excluded for holding "dash"
    assert {("2", f"2{i:02d}") for i in range(6)} <= found  # not only the exact phrase, not "NOT nose"
    assert _metrics(capsys.readouterr().out)["Recall@100"] == 1.0


def test_copies_in_a_collection_are_each_retrieved_not_folded(eval_env, capsys):
    """Web search folds near-duplicates under one result; a judged collection's copies are
    judged one by one, so each must be in the run (TREC collections hold many)."""
    root = write_collection(eval_env / "copies")
    docs = [json.loads(line) for line in (root / "docs.jsonl").read_text().splitlines()]
    # Long enough to be compared (minhash.MIN_TERMS distinct terms): document 100 and a copy.
    docs[0]["text"] += " Wind tunnel tests of four blade designs at several thrust settings and speeds."
    twin = {**docs[0], "id": "twin"}
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [*docs, twin]))
    with (root / "qrels.tsv").open("a") as qrels:
        qrels.write("1\ttwin\t2\n")
    run = eval_env / "copies.trec"
    assert main(["eval", str(root), "--state", str(eval_env / "state"), "--run", str(run)]) == 0
    out, err = capsys.readouterr()
    ranked = [r.split()[2] for r in run.read_text().splitlines() if r.startswith("1 ")]
    assert {"100", "twin"} <= set(ranked)
    assert "(0 near-duplicates folded)" in err
    assert _metrics(out)["Recall@100"] == 1.0


def test_a_collection_in_beirs_layout_is_evaluated(eval_env, capsys):
    ours = write_collection(eval_env / "ours")
    beir = eval_env / "beir-tiny"
    (beir / "qrels").mkdir(parents=True)
    for name, target in (("docs.jsonl", "corpus.jsonl"), ("queries.jsonl", "queries.jsonl")):
        rows = [json.loads(line) for line in (ours / name).read_text().splitlines()]
        (beir / target).write_text("".join(json.dumps({"_id": r.pop("id"), **r}) + "\n" for r in rows))
    judged = (ours / "qrels.tsv").read_text().splitlines()[1:]
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(judged) + "\n")
    assert main(["eval", str(beir), "--state", str(eval_env / "beir-state")]) == 0
    metrics = _metrics(capsys.readouterr().out)
    assert metrics["MAP"] >= 0.9 and metrics["Recall@100"] == 1.0


def test_eval_again_on_the_same_state_adds_no_documents(eval_env, capsys):
    root = write_collection(eval_env / "tiny")
    assert main(["eval", str(root), "--quiet"]) == 0
    first = capsys.readouterr()
    assert first.err == ""
    assert main(["eval", str(root), "--quiet"]) == 0
    second = capsys.readouterr().out
    assert _metrics(second) == _metrics(first.out)

    state = eval_env / "var" / "eval" / "tiny"  # the default state: <var_dir>/eval/<name>
    assert f"run file {state / 'run.trec'}" in second
    engine = make_engine(f"sqlite:///{state / 'nimbus.db'}")
    with session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(Document)) == 30
    engine.dispose()


def test_missing_qrels_is_an_error_that_says_what_is_needed(eval_env, capsys):
    root = write_collection(eval_env / "tiny")
    (root / "qrels.tsv").unlink()
    assert main(["eval", str(root), "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "qrels.tsv not found" in err and "docs.jsonl, queries.jsonl and qrels.tsv" in err


def test_judgments_of_documents_and_topics_the_collection_lacks_are_kept_or_skipped_and_said(
    eval_env, capsys
):
    """Real collections judge a few documents their corpus lacks (trec_eval counts them as
    relevant documents no run finds) and topics their query file lacks."""
    root = write_collection(eval_env / "tiny")
    with (root / "qrels.tsv").open("a") as fh:
        fh.write("1\tgone\t2\n9\t100\t1\n")
    assert main(["eval", str(root), "--quiet", "--state", str(eval_env / "state")]) == 0
    out, err = capsys.readouterr()
    assert "1 of 31 judgments name documents the corpus lacks (first 'gone', qrels.tsv:32)" in err
    assert "1 judgments of 1 queries not in queries.jsonl skipped (first '9', qrels.tsv:33)" in err
    qrels = [q for q in _qrels(root / "qrels.tsv") if q.query_id != "9"]
    run = ir_measures.read_trec_run(str(eval_env / "state" / "run.trec"))
    expected = ir_measures.calc_aggregate([AP, R @ 100], qrels, run)
    assert _metrics(out)["MAP"] == pytest.approx(expected[AP], abs=5e-5)
    assert _metrics(out)["Recall@100"] == pytest.approx(expected[R @ 100], abs=5e-5) and expected[R @ 100] < 1


def test_qrels_of_another_corpus_are_refused_before_anything_is_stored(eval_env, capsys):
    root = write_collection(eval_env / "tiny")
    lines = (root / "qrels.tsv").read_text().splitlines()
    wrong = [lines[0]] + [line.replace("\t", "\tx", 1) if i % 3 else line for i, line in enumerate(lines[1:])]
    (root / "qrels.tsv").write_text("\n".join(wrong) + "\n")
    assert main(["eval", str(root), "--quiet", "--state", str(eval_env / "state")]) == 2
    err = capsys.readouterr().err
    assert "unknown document id" in err and "judgments name documents the corpus lacks" in err
    assert not (eval_env / "state" / "nimbus.db").exists()


def test_headerless_qrels_and_beirs_dev_split_are_read(eval_env, capsys):
    root = write_collection(eval_env / "tiny")
    rows = (root / "qrels.tsv").read_text().splitlines()[1:]
    (root / "qrels.tsv").write_text("".join(row.replace("\t", " ") + "\n" for row in rows))
    assert main(["eval", str(root), "--quiet", "--state", str(eval_env / "plain")]) == 0
    assert _metrics(capsys.readouterr().out)["Recall@100"] == 1.0
    (root / "qrels").mkdir()
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    (root / "qrels.tsv").unlink()
    assert main(["eval", str(root), "--quiet", "--state", str(eval_env / "dev")]) == 0
    assert _metrics(capsys.readouterr().out)["Recall@100"] == 1.0


def test_bad_collection_from_the_shell_exits_nonzero_without_a_traceback(eval_env):
    root = write_collection(eval_env / "tiny")
    (root / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\n9\t100\t1\n")
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "eval", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "nimbus eval:" in done.stderr and "unknown query id '9'" in done.stderr
    assert "Traceback" not in done.stderr


def test_eval_stores_the_collection_by_an_archive_crawl_of_a_jsonl_bundle(eval_env, capsys):
    """The documents take the path users' archives take: a jsonl bundle made in the state
    directory (the collection's own folder untouched), registered and crawled through the
    ledger and the committer; an empty document is skipped as a crawl skips it (nothing can
    find it) and said; a changed collection is a new bundle whose documents replace the old."""
    root = write_collection(eval_env / "tiny")
    docs = [json.loads(line) for line in (root / "docs.jsonl").read_text().splitlines()]
    empty = {"id": "empty", "title": "", "text": ""}
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [*docs, empty]))
    state = eval_env / "state"
    assert main(["eval", str(root), "--state", str(state)]) == 0
    out, err = capsys.readouterr()
    assert "stored 30 documents (0 copies of others, 1 empty or unreadable left out)" in err
    assert "archive #1 (jsonl, " in err and "finished, 1/1 batches, 31 records" in err
    assert _metrics(out)["Recall@100"] == 1.0
    assert sorted(p.name for p in root.iterdir()) == ["docs.jsonl", "qrels.tsv", "queries.jsonl"]
    bundle = state / "bundles" / "tiny"
    assert (bundle / "bundle.toml").read_text().startswith('type = "jsonl"\n')
    engine = make_engine(f"sqlite:///{state / 'nimbus.db'}")
    with session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(ArchiveBundle)) == 1
        urls = set(session.scalars(select(Document.url)))
    assert "https://tiny.collection.invalid/doc/100" in urls  # the URLs eval always gave them

    # Document 100 rewritten to be about something else: a new bundle, a newer capture.
    docs[0]["text"] = "Tea ceremony customs of the Song dynasty."
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    run = eval_env / "changed.trec"
    assert main(["eval", str(root), "--state", str(state), "--run", str(run), "--quiet"]) == 0
    with session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(ArchiveBundle)) == 2
        assert session.scalar(select(func.count()).select_from(Document)) == 30
    engine.dispose()
    found = {(r.split()[0], r.split()[2]) for r in run.read_text().splitlines()}
    assert ("1", "100") not in found and ("1", "101") in found
