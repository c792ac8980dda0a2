"""A URL no crawl can use, given to `nimbus crawl seed` or `nimbus crawl`: exit status 2 and
one line naming it, never a traceback (http://[::1/ was a ValueError out of urlsplit)."""

from __future__ import annotations

import pytest

from services.cli import main
from tests.hostile_urls import HOSTILE_URLS

IDS = [repr(u)[:40] for u, _ in HOSTILE_URLS]


@pytest.fixture(autouse=True)
def _private_storage(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NIMBUS_DATABASE_URL", f"sqlite:///{tmp_path}/nimbus.db")
    monkeypatch.setenv("NIMBUS_VAR_DIR", str(tmp_path / "var"))


def _one_line_refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.err and len(err.splitlines()) == 1, captured.err
    return err


@pytest.mark.parametrize(("url", "why"), HOSTILE_URLS, ids=IDS)
def test_crawl_seed_refuses_a_bad_url_in_one_line(url: str, why: str, capsys) -> None:
    err = _one_line_refusal(["crawl", "seed", "http://fine.example/", url], capsys)
    assert err.startswith("nimbus crawl seed: ")
    assert why in err


@pytest.mark.parametrize(
    ("url", "why"), [(u, w) for u, w in HOSTILE_URLS if u.startswith("http")], ids=lambda v: repr(v)[:40]
)
def test_a_bare_crawl_refuses_a_bad_seed_in_one_line(url: str, why: str, capsys) -> None:
    err = _one_line_refusal(["crawl", "--quiet", url], capsys)
    assert err.startswith("nimbus crawl") and "bad seed" in err and why in err


def test_crawl_seed_file_takes_any_number_in_batches_after_checking_every_one(tmp_path, capsys) -> None:
    """What the dashboard's 413 points to for more seeds than a form holds."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# from the sitemap\n" + "\n".join(f"http://a.test/{i}" for i in range(2500)) + "\n")
    assert main(["crawl", "seed", "--file", str(seeds), "http://b.test/"]) == 0
    assert "2501 new URLs in the frontier (0 known already)" in capsys.readouterr().out
    seeds.write_text("http://c.test/\nhttp://[::1/\n")
    err = _one_line_refusal(["crawl", "seed", "--file", str(seeds)], capsys)
    assert "IPv6" in err
    assert main(["crawl", "seed", "http://c.test/"]) == 0  # the good line of the bad file was not seeded
    assert "1 new URLs" in capsys.readouterr().out
