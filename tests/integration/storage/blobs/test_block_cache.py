"""Whole blocks kept on local disk in front of S3 (moto): the first read is a ranged GET,
later reads come from the copy; bounded, least recently read out first."""

from __future__ import annotations

import pytest

from services.storage.blobs.blobstore import open_blobstore
from services.storage.blobs.block_cache import BlockCache
from tests.polling import wait_for


@pytest.fixture
def s3(s3_bucket, moto_server):
    return open_blobstore(f"s3://{s3_bucket}/nimbus", moto_server)


def block(i: int, size: int = 4000) -> bytes:
    return bytes((i + k) % 256 for k in range(size))


def test_the_first_read_goes_to_s3_and_later_ones_to_the_local_copy(s3, tmp_path):
    s3.put("records/a.rec.gz", block(1))
    cache = BlockCache(s3, tmp_path / "blocks", max_bytes=1_000_000)
    try:
        assert cache.get("records/a.rec.gz", 10, 20) == block(1)[10:20]
        wait_for(lambda: cache.holds("records/a.rec.gz"), timeout=10, what="the block copied")
        assert (tmp_path / "blocks" / "records" / "a.rec.gz").read_bytes() == block(1)
        s3.delete("records/a.rec.gz")  # from now on only the copy can answer
        assert cache.get("records/a.rec.gz", 100, 300) == block(1)[100:300]
    finally:
        cache.close()


def test_copies_are_bounded_least_recently_read_first_out(s3, tmp_path):
    for i in range(3):
        s3.put(f"records/{i}.rec.gz", block(i))
    cache = BlockCache(s3, tmp_path / "blocks", max_bytes=9_000)  # room for two blocks of 4,000
    try:
        for i in (0, 1):
            cache.get(f"records/{i}.rec.gz", 0, 10)
            wait_for(lambda i=i: cache.holds(f"records/{i}.rec.gz"), timeout=10, what=f"block {i} copied")
        cache.get("records/0.rec.gz", 0, 10)  # 0 read again: 1 is now the least recently read
        cache.get("records/2.rec.gz", 0, 10)
        wait_for(
            lambda: cache.holds("records/2.rec.gz") and not cache.holds("records/1.rec.gz"),
            timeout=10,
            what="block 2 copied and block 1 let go",
        )
        assert cache.holds("records/0.rec.gz")
        assert not (tmp_path / "blocks" / "records" / "1.rec.gz").exists()
        assert cache.cached_bytes == 8_000
        assert cache.get("records/1.rec.gz", 5, 9) == block(1)[5:9]  # still read, from S3
    finally:
        cache.close()


def test_a_block_larger_than_the_cache_is_read_but_never_copied(s3, tmp_path):
    s3.put("records/big.rec.gz", block(7, 20_000))
    s3.put("records/small.rec.gz", block(8))
    cache = BlockCache(s3, tmp_path / "blocks", max_bytes=10_000)
    try:
        assert cache.get("records/big.rec.gz", 0, 5) == block(7, 20_000)[:5]
        cache.get("records/small.rec.gz", 0, 5)
        wait_for(lambda: cache.holds("records/small.rec.gz"), timeout=10, what="the small block copied")
        assert not cache.holds("records/big.rec.gz") and cache.cached_bytes == 4_000
    finally:
        cache.close()


def test_a_restart_keeps_the_copies_and_drops_a_cut_download(s3, tmp_path):
    s3.put("records/a.rec.gz", block(2))
    first = BlockCache(s3, tmp_path / "blocks", max_bytes=1_000_000)
    first.get("records/a.rec.gz", 0, 1)
    wait_for(lambda: first.holds("records/a.rec.gz"), timeout=10, what="the block copied")
    first.close()
    (tmp_path / "blocks" / "records" / ".part-cut").write_bytes(b"half a block")
    second = BlockCache(s3, tmp_path / "blocks", max_bytes=1_000_000)
    try:
        assert second.holds("records/a.rec.gz") and second.cached_bytes == 4_000
        assert not (tmp_path / "blocks" / "records" / ".part-cut").exists()
    finally:
        second.close()
