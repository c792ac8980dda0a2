"""Schemathesis fuzzes the search API against its own OpenAPI schema: no server error, and
every answer is one the schema describes (status, content type, body)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from services.config import Settings
from services.search.http.app import create_app
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

DOCS = [
    Doc("http://f.test/0", "Wing <b>lift</b>", 'Wing lift in supersonic flow "quoted" -minus site:x.'),
    Doc("http://f.test/1", "Shock", "Shock waves over a wedge.", content_type="application/pdf"),
]


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    base = Settings.of(
        database_url=f"sqlite:///{root}/nimbus.db",
        blob_url=f"file://{root}/blobs",
        var_dir=str(root / "var"),
        rate_limit="off",  # a 429 after many examples would be the limit working, not a bug
    )
    commit_documents(base, DOCS, 0, "crawl-f")
    publish_index(base, DOCS, "v1")
    return create_app(base, recheck_seconds=3600)


def test_the_api_answers_every_generated_request_as_its_schema_says(fuzzed_app):
    # Driven from inside a test (not schemathesis' pytest plugin, which does not run on this
    # pytest), one Hypothesis run per operation of the schema.
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/api/search", "/healthz"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def answers_as_described(case: schemathesis.Case) -> None:
            case.call_and_validate()

        answers_as_described()
