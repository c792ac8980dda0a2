"""`nimbus demo` serves the admin dashboard beside the UI, behind NIMBUS_ADMIN_TOKEN or a
token made for the run, and says where it is. The crawl and the build are replaced: these
tests look at what the demo serves and prints, not at the pipeline."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import services.demo.run
from services.cli import main
from services.crawler.report.progress import CrawlStats
from services.demo.run import Prepared


@pytest.fixture
def served(tmp_path, monkeypatch) -> list[TestClient]:
    """The app `nimbus demo` would serve, as a test client, instead of serving it."""
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"sqlite:///{tmp_path}/nimbus.db")
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.delenv("NIMBUS_ADMIN_TOKEN", raising=False)
    crawl = CrawlStats(pages=3, seconds=0.1, counters={"documents": 2, "status_200": 2, "status_404": 1})

    def prepare(settings, data_dir, *, keep_serving, **kwargs):
        from services.storage.sql.engines import make_engine
        from services.storage.sql.schema import init_db

        init_db(make_engine(settings.database_url))
        return Prepared({"sample_web": 0.0, "crawl": 0.1, "index": 0.2}, crawl)

    apps: list[TestClient] = []
    monkeypatch.setattr(services.demo.run, "prepare", prepare)
    monkeypatch.setattr(services.demo.run, "_serve", lambda app, sock: apps.append(TestClient(app)))
    return apps


def _sign_in(client: TestClient, token: str) -> int:
    response = client.post("/admin/login", data={"token": token}, follow_redirects=False)
    return response.status_code


def test_the_demo_honours_nimbus_admin_token(served, monkeypatch, capsys):
    monkeypatch.setenv("NIMBUS_ADMIN_TOKEN", "the-operators-token")
    assert main(["demo", "--port", "0"]) == 0
    (client,) = served
    assert client.get("/admin").status_code == 401  # the sign-in page: the dashboard is there
    assert _sign_in(client, "the-operators-token") == 303
    assert client.get("/admin").status_code == 200
    out = capsys.readouterr().out
    assert "/admin (sign in with your NIMBUS_ADMIN_TOKEN)" in out
    assert "the-operators-token" not in out


def test_without_a_token_the_demo_makes_one_and_prints_it(served, capsys):
    assert main(["demo", "--port", "0"]) == 0
    (client,) = served
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("admin dashboard: http://127.0.0.1:"))
    token = line.split("this session's token ", 1)[1].split(";", 1)[0]
    assert len(token) >= 20
    assert _sign_in(client, "not-it") == 401
    assert _sign_in(client, token) == 303


def test_the_demo_says_what_its_requests_were(served, capsys):
    assert main(["demo", "--port", "0"]) == 0
    out = capsys.readouterr().out
    assert "demo: crawled 3 URLs in 0.1 s: 2 documents, 0 redirects, 1 not found (404, 410)" in out
