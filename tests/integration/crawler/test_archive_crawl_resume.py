"""kill -9 in the middle of `nimbus archive crawl`, then start it again: exactly the documents
(and aliases) of an uninterrupted run, none lost, none twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import ArchiveBatch, ArchiveBundle, Document
from services.storage.sql.schema import init_db
from tests.integration.crawler.archive_bundles import WIKI, aliases, bundle, documents
from tests.polling import wait_for

REPO = Path(__file__).resolve().parents[3]


def _env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    return {
        **env,
        "NIMBUS_DATABASE_URL": f"sqlite:///{state / 'nimbus.db'}",
        "NIMBUS_BLOB_URL": f"file://{state / 'blobs'}",
        "NIMBUS_VAR_DIR": str(state / "var"),
    }


def _crawl(folder: Path, state: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.cli",
            "archive",
            "crawl",
            str(folder),
            "--quiet",
            "--batch-size",
            "2",
        ],
        env=_env(state),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=(state / "crawl.log").open("ab"),
    )


def _committed(url: str) -> tuple[int, str]:
    engine = make_engine(url)
    init_db(engine)
    try:
        with session_factory(engine)() as s:
            done = s.scalar(
                select(func.count()).select_from(ArchiveBatch).where(ArchiveBatch.state == "committed")
            )
            state = s.scalar(select(ArchiveBundle.state)) or ""
            return int(done or 0), state
    finally:
        engine.dispose()


def test_a_killed_archive_crawl_restarted_stores_what_an_uninterrupted_one_does(
    tmp_path: Path, sample_data: Path
) -> None:
    folder = bundle(
        tmp_path / "enwiki",
        'type = "mediawiki"\ndescription = "enwiki sample"\n',
        {"enwiki.xml.bz2": sample_data / WIKI},
    )
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    reference.mkdir()
    killed.mkdir()
    assert _crawl(folder, reference).wait(timeout=300) == 0

    url = _env(killed)["NIMBUS_DATABASE_URL"]
    first = _crawl(folder, killed)
    try:
        wait_for(lambda: _committed(url)[0] >= 3, timeout=120, what="three archive batches committed")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    done, state = _committed(url)
    assert state != "finished", "the crawl ended before the kill: nothing was interrupted"
    before = documents(url)
    assert 0 < len(before) < len(documents(_env(reference)["NIMBUS_DATABASE_URL"]))

    assert _crawl(folder, killed).wait(timeout=300) == 0
    expected, got = documents(_env(reference)["NIMBUS_DATABASE_URL"]), documents(url)
    assert got == expected and len(got) == 106
    assert aliases(url) == aliases(_env(reference)["NIMBUS_DATABASE_URL"])
    assert before.items() <= got.items()  # what was committed before the kill stayed as it was
    assert _committed(url)[1] == "finished" and done >= 3
    engine = make_engine(url)
    with session_factory(engine)() as s:  # once each: no URL twice, no doc number twice
        rows = s.execute(select(func.count(), func.count(func.distinct(Document.doc_num)))).one()
        assert tuple(rows) == (106, 106)
    engine.dispose()
