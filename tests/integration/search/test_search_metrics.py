"""``/metrics``: Prometheus's text format, counting only this app's own requests."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.search.search_corpus import Doc, publish_corpus

DOCS = [
    Doc("http://m.test/a", "Wing lift", "The wing of an aircraft produces lift."),
    Doc("http://m.test/b", "Drag", "Drag slows the aircraft down."),
]


@pytest.fixture
def published(settings):
    return publish_corpus(settings, DOCS, "crawl-m")


def samples(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_requests_queries_and_the_index_are_counted(client) -> None:
    before = samples(client)
    assert before[("nimbus_index_documents", ())] == 2
    version = before[("nimbus_index_version", ())]
    assert version >= 1
    client.get("/api/search", params={"q": "wing"})
    client.get("/api/search", params={"q": "wing OR drag"})
    client.get("/", params={"q": "drag"})
    client.get("/cached/99")  # no such document: a 4xx under its route template
    after = samples(client)
    queries = sum(v for (name, _), v in after.items() if name == "nimbus_search_queries_total")
    assert queries == 3
    api = ("nimbus_http_request_seconds_count", (("route", "/api/search"), ("status", "2xx")))
    assert after[api] == 2
    cached = [
        v
        for (name, labels), v in after.items()
        if name == "nimbus_http_request_seconds_count"
        and ("status", "4xx") in labels
        and dict(labels)["route"].startswith("/cached/")
    ]
    assert cached == [1]  # one label set for every /cached/N: labels stay bounded
    assert after[("nimbus_search_query_seconds_count", ())] == 3
    assert not any(dict(labels).get("route") == "/metrics" for _, labels in after)  # scrapes not timed


def test_several_workers_report_their_requests_together(published, tmp_path) -> None:
    """`nimbus serve --workers 2`: a scrape reaches one worker, and still counts every
    request, whichever worker answered it (prometheus-client's multiprocess mode)."""
    import os
    import socket
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    from tests.polling import wait_for

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIMBUS_", "PROMETHEUS_"))}
    env |= {
        "NIMBUS_DATABASE_URL": published.database_url,
        "NIMBUS_BLOB_URL": published.blob_url,
        "NIMBUS_VAR_DIR": str(published.var_dir),
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
    }
    cmd = [sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--workers", "2"]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> str:
        with urllib.request.urlopen(base + path, timeout=10) as response:
            return response.read().decode()

    def up() -> bool:
        try:
            return bool(get("/healthz"))
        except OSError:
            return False

    try:
        wait_for(up, timeout=60, what="nimbus serve --workers 2 answering")
        metrics_dir = Path(published.var_dir) / "metrics" / f"serve-{port}"

        def writers() -> set[str]:  # the pids with value files: each worker's gauges make one
            return {p.name.rsplit("_", 1)[-1] for p in metrics_dir.glob("*.db")}

        wait_for(lambda: len(writers()) >= 2, timeout=60, what="both workers keeping their metrics")
        for i in range(30):
            get(f"/api/search?q=wing+{i}")
        for _ in range(6):  # whichever worker answers the scrape
            counts = {}
            for family in text_string_to_metric_families(get("/metrics")):
                for s in family.samples:
                    if s.name == "nimbus_search_queries_total":
                        counts[s.labels["mode"]] = s.value
            assert sum(counts.values()) == 30, counts
    finally:
        server.terminate()
        server.wait(timeout=30)
