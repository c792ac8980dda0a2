"""Both blob-store backends behave alike: file:// on disk and s3:// on moto."""

from __future__ import annotations

import pytest

from services.storage.blobs.blobstore import FileBlobStore, S3BlobStore, open_blobstore
from services.storage.errors import BlobNotFoundError, StorageError
from services.storage.formats.blocks import ContentBlockWriter, ContentType, entry_range, parse_entry


@pytest.fixture(params=["file", "s3"])
def store(request, tmp_path):
    if request.param == "file":
        return open_blobstore(f"file://{tmp_path}/blobs")
    bucket = request.getfixturevalue("s3_bucket")
    return open_blobstore(f"s3://{bucket}/nimbus", endpoint_url=request.getfixturevalue("moto_server"))


def test_put_get_ranges_and_list(store):
    store.put("content/a.ncb", b"0123456789")
    store.put("records/a.rec.gz", b"xyz")
    assert store.get("content/a.ncb") == b"0123456789"
    assert store.get("content/a.ncb", 2, 5) == b"234"
    assert store.get("content/a.ncb", 7) == b"789"
    assert store.get("content/a.ncb", 0, 3) == b"012"
    assert store.get("content/a.ncb", 8, 50) == b"89"  # a range past the end: what there is
    assert store.get("content/a.ncb", 4, 4) == b""
    assert store.size("content/a.ncb") == 10
    assert list(store.list("content/")) == ["content/a.ncb"]
    assert list(store.list()) == ["content/a.ncb", "records/a.rec.gz"]
    store.delete("records/a.rec.gz")
    assert not store.exists("records/a.rec.gz")


def test_download_copies_in_chunks_atomically(store, tmp_path):
    data = bytes(range(256)) * 1000
    store.put("index/segment-1.nseg", data)
    target = tmp_path / "cache" / "segment-1.nseg"
    assert store.download("index/segment-1.nseg", target) == target
    assert target.read_bytes() == data
    assert b"".join(store.iter_chunks("index/segment-1.nseg", chunk_size=1000)) == data
    assert [p.name for p in target.parent.iterdir()] == ["segment-1.nseg"]  # no temp file left
    with pytest.raises(BlobNotFoundError):
        store.download("index/missing.nseg", tmp_path / "cache" / "missing.nseg")
    assert not (tmp_path / "cache" / "missing.nseg").exists()


def test_a_local_file_of_a_blob_is_a_copy_or_on_disk_the_blob_itself(store, tmp_path):
    data = bytes(range(256)) * 100
    store.put("index/segment-2.nseg", data)
    path = store.local_file("index/segment-2.nseg", tmp_path / "cache" / "segment-2.nseg")
    assert path.read_bytes() == data
    if isinstance(store, FileBlobStore):  # no copy of a segment that is a file already
        assert path.parent == store.root / "index" and not (tmp_path / "cache").exists()
    with pytest.raises(BlobNotFoundError):
        store.local_file("index/missing.nseg", tmp_path / "cache" / "missing.nseg")


def test_missing_blob_is_a_named_error(store):
    with pytest.raises(BlobNotFoundError, match="nope"):
        store.get("content/nope.ncb")
    with pytest.raises(BlobNotFoundError, match="nope"):
        store.get("content/nope.ncb", 10, 20)  # a ranged read names it too


def test_single_document_ranged_read_from_a_content_block(store):
    writer = ContentBlockWriter()
    bodies = [b"<p>first</p>", b"<p>second</p>" * 100, b"third"]
    for i, body in enumerate(bodies):
        writer.add(body, ContentType.HTML, bytes([i]) * 20)
    store.put("content/b.ncb", writer.to_bytes())
    start, end = entry_range(1)
    entry = parse_entry(store.get("content/b.ncb", start, end), 1)
    assert store.get("content/b.ncb", entry.offset, entry.offset + entry.length) == bodies[1]


def test_backend_chosen_by_url_only(tmp_path, moto_server):
    assert isinstance(open_blobstore(f"file://{tmp_path}"), FileBlobStore)
    assert isinstance(open_blobstore("s3://bucket/p", endpoint_url=moto_server), S3BlobStore)
    with pytest.raises(StorageError, match="use file://"):
        open_blobstore("ftp://x/y")


def test_missing_bucket_says_how_to_fix(moto_server):
    store = open_blobstore("s3://no-such-bucket-nimbus/x", endpoint_url=moto_server)
    with pytest.raises(StorageError, match="does not exist"):
        store.put("a", b"b")


def test_names_cannot_escape_the_store(tmp_path):
    store = FileBlobStore(tmp_path / "blobs")
    with pytest.raises(StorageError, match="invalid blob name"):
        store.put("../outside", b"x")


def test_writer_stores_a_large_blob_whole_and_nothing_after_an_error(store):
    # 20 MB: above boto3's 8 MB threshold, so S3 gets a multipart upload (a single
    # PUT stops at 5 GB, which the segment of a large crawl passes).
    piece = bytes(range(256)) * 4096
    with store.writer("index/segment-big.nseg") as fh:
        for _ in range(20):
            fh.write(piece)
    assert store.size("index/segment-big.nseg") == 20 * len(piece)
    assert store.get("index/segment-big.nseg", 5 * len(piece), 5 * len(piece) + 300) == piece[:300]
    with pytest.raises(RuntimeError, match="half-way"), store.writer("index/segment-bad.nseg") as fh:
        fh.write(piece)
        raise RuntimeError("failed half-way")
    assert not store.exists("index/segment-bad.nseg")
    assert list(store.list("index/")) == ["index/segment-big.nseg"]  # no temporary left behind
