"""Bundles on S3 (moto) read as they are read from disk, an unreadable object named, and SQL rows
from MariaDB."""

from __future__ import annotations

import bz2
from pathlib import Path

import boto3
import pytest

from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import load_bundle
from services.archives.errors import BundleError, SourceError
from services.archives.records import ArchiveRecord
from tests.unit.archives.builders import gz, page

WIKI = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def upload(moto_server: str, bucket: str, prefix: str, files: dict[str, bytes]) -> None:
    client = boto3.client("s3", endpoint_url=moto_server)
    for name, data in files.items():
        client.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=data)


def keyed(records: list[ArchiveRecord]) -> list[tuple[int, str, str]]:
    return [(r.offset, r.url, r.kind) for r in records]


@pytest.mark.parametrize(
    ("kind", "files"),
    [
        ("warc", {"iana.warc.gz": "warc/iana.warc.gz", "example.arc.gz": "warc/example.arc.gz"}),
        ("mediawiki", {"dump.xml.bz2": WIKI}),
    ],
)
def test_a_bundle_on_s3_reads_as_on_disk(
    tmp_path: Path, sample_data: Path, moto_server: str, s3_bucket: str, kind: str, files: dict[str, str]
) -> None:
    data = {name: (sample_data / path).read_bytes() for name, path in files.items()}
    data["bundle.toml"] = f'type = "{kind}"\ndescription = "s3 test"\nbatch_size = 60\n'.encode()
    upload(moto_server, s3_bucket, "bundles/one", data)
    for name, content in data.items():
        (tmp_path / name).write_bytes(content)
    remote = load_bundle(f"s3://{s3_bucket}/bundles/one/", endpoint_url=moto_server)
    local = load_bundle(str(tmp_path))
    assert remote.files == local.files and remote.sha256 == local.sha256
    batches = plan_batches(remote)
    assert batches == plan_batches(local)
    when = 1_700_000_000.0
    got = [r for b in batches for r in read_batch(remote, b, fetched_at=when)]
    assert keyed(got) == keyed([r for b in batches for r in read_batch(local, b, fetched_at=when)])
    assert any(r.payload or r.document for r in got)


def test_an_unreadable_s3_object_is_named_and_the_rest_is_read(
    moto_server: str, s3_bucket: str, sample_data: Path
) -> None:
    good = gz(*(page(f"http://s3.test/{i}", f"<html>{i}</html>") for i in range(3)))
    upload(
        moto_server,
        s3_bucket,
        "b",
        {"bundle.toml": b'type = "warc"\ndescription = "x"\n', "a.warc.gz": good, "b.warc.gz": good},
    )
    bundle = load_bundle(f"s3://{s3_bucket}/b", endpoint_url=moto_server)
    batches = plan_batches(bundle)
    boto3.client("s3", endpoint_url=moto_server).delete_object(Bucket=s3_bucket, Key="b/b.warc.gz")
    read, failed = [], []
    for batch in batches:
        try:
            read += list(read_batch(bundle, batch, fetched_at=0.0))
        except SourceError as exc:
            failed.append(str(exc))
    assert [r.url for r in read if r.payload] == [f"http://s3.test/{i}" for i in range(3)]
    (message,) = failed
    assert f"s3://{s3_bucket}/b/b.warc.gz" in message and "s3:GetObject" in message
    with pytest.raises(BundleError, match=r"s3://no-such-bucket/x/bundle\.toml: cannot be read"):
        load_bundle("s3://no-such-bucket/x/", endpoint_url=moto_server)


@pytest.mark.mariadb
def test_sql_rows_from_mariadb(tmp_path: Path, mysql_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(mysql_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE articles (slug VARCHAR(40) PRIMARY KEY, headline TEXT, body TEXT)"))
        for i in range(25):
            conn.execute(
                text("INSERT INTO articles VALUES (:s, :h, :b)"),
                {"s": f"a{i:02d}", "h": f"Headline {i}", "b": f"Body {i} ü"},
            )
    engine.dispose()
    monkeypatch.setenv("ARTICLES_DB", mysql_url)
    (tmp_path / "bundle.toml").write_text(
        'type = "sql"\ndescription = "news"\nquery = "SELECT slug, headline, body FROM articles"\n'
        'database_url_env = "ARTICLES_DB"\nkey_column = "slug"\n'
        'title_column = "headline"\ntext_column = "body"\n'
        'url_template = "https://news.test/{slug}"\n'
    )
    bundle = load_bundle(str(tmp_path))
    batches = plan_batches(bundle, batch_size=10)
    assert [b.seek_state["from"] for b in batches] == ["a00", "a10", "a20"]
    records = [r for b in batches for r in read_batch(bundle, b, fetched_at=0.0)]
    assert [r.url for r in records] == [f"https://news.test/a{i:02d}" for i in range(25)]
    assert records[7].document is not None and records[7].document.text == "Body 7 ü"
    assert "mysql" not in (tmp_path / "bundle.toml").read_text()  # credentials stay in the environment


def test_a_wiki_bundle_on_s3_reads_only_its_batch(
    moto_server: str, s3_bucket: str, sample_data: Path
) -> None:
    """A worker's last batch of the sample dump costs far fewer bytes than the dump (seek points)."""
    dump = (sample_data / WIKI).read_bytes()
    upload(
        moto_server,
        s3_bucket,
        "w",
        {"bundle.toml": b'type = "mediawiki"\ndescription = "x"\nbatch_size = 40\n', "d.xml.bz2": dump},
    )
    bundle = load_bundle(f"s3://{s3_bucket}/w/", endpoint_url=moto_server)
    last = plan_batches(bundle)[-1]
    assert last.seek_state["bz2"][0][0] > 0  # starts at a block in the middle
    fetched: list[int] = []
    original = bundle.location.get  # type: ignore[attr-defined]

    def counting(name: str, start: int, end: int) -> bytes:
        data: bytes = original(name, start, end)
        fetched.append(len(data))
        return data

    bundle.location.get = counting  # type: ignore[attr-defined]
    assert any(r.document for r in read_batch(bundle, last, fetched_at=0.0))
    assert sum(fetched) < len(dump) / 2
    assert bz2.decompress(dump)  # the sample itself is sound
