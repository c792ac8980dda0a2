"""The pure parts of eval's crawl path: the bundle it makes beside its state, the ids each
stored document stands for, and a query's run lines from a ranking."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from services.archives.bundle import load_bundle
from services.eval.collection import load_collection
from services.eval.crawl import write_bundle
from services.eval.run import run_hits


def _collection(root: Path) -> Path:
    root.mkdir()
    docs = [
        {"id": "a 1", "title": "T", "text": "x"},
        {"id": "b", "title": "", "text": "y", "url": "http://e.test/b"},
    ]
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text('{"id": "1", "text": "x"}\n')
    (root / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\n1\ta 1\t1\n")
    return root


def test_the_bundle_is_the_collections_docs_file_under_its_name_in_the_state(tmp_path: Path) -> None:
    collection = load_collection(_collection(tmp_path / "tiny"))
    folder = write_bundle(collection.docs_file, collection.name, tmp_path / "state")
    assert folder == (tmp_path / "state" / "bundles" / "tiny").resolve()
    spec = tomllib.loads((folder / "bundle.toml").read_text())
    assert spec["type"] == "jsonl" and spec["language"] == "en"
    assert "docs.jsonl" in spec["description"] and "sha256" in spec["description"]
    bundle = load_bundle(str(folder))
    assert bundle.files == ["docs.jsonl"] and bundle.name == "tiny"  # the host of its URLs
    again = write_bundle(collection.docs_file, collection.name, tmp_path / "state")
    assert load_bundle(str(again)).sha256 == bundle.sha256  # the same collection: the same bundle
    (tmp_path / "tiny" / "docs.jsonl").write_text('{"id": "a 1", "title": "T", "text": "changed"}\n')
    changed = write_bundle(collection.docs_file, collection.name, tmp_path / "state")
    assert load_bundle(str(changed)).sha256 != bundle.sha256


def test_each_document_is_named_by_the_url_the_crawl_stores_it_under(tmp_path: Path) -> None:
    collection = load_collection(_collection(tmp_path / "tiny"))
    assert dict(collection.doc_urls()) == {
        "https://tiny.collection.invalid/doc/a%201": "a 1",
        "http://e.test/b": "b",  # an object with a url keeps it
    }


def test_run_lines_follow_the_ranking_with_every_copy_in_a_row_up_to_the_depth() -> None:
    doc_ids = {4: ["d4"], 7: ["d7", "twin"], 9: ["d9"]}
    hits, foreign = run_hits([7, 5, 4, 9], doc_ids, depth=1000)
    assert hits == [("d7", 1000.0), ("twin", 999.0), ("d4", 998.0), ("d9", 997.0)]
    assert foreign == 1  # doc 5 is no document of the collection
    assert run_hits([7, 4, 9], doc_ids, depth=2) == ([("d7", 2.0), ("twin", 1.0)], 0)
