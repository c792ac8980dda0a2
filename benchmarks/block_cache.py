"""Record reads from S3 against reads of the search instance's local copy of the block.

    .venv/bin/python -m benchmarks.block_cache

A 2 MB block on a moto S3 server on loopback; 300 random ranges of 1.9 KB (a record's
size on the benchmark corpus) read by ranged GET, then through ``BlockCache`` once it has
copied the block. Real S3's first-byte latency is higher than moto's on loopback, so the
first figure is a lower bound of what the cache saves a deployment per record read.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def p50_ms(read: Callable[[int, int], bytes], ranges: list[tuple[int, int]]) -> float:
    times = []
    for start, end in ranges:
        began = time.perf_counter()
        read(start, end)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(key, value)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import boto3
    from moto.server import ThreadedMotoServer

    from services.storage.blobs.blobstore import open_blobstore
    from services.storage.blobs.block_cache import BlockCache

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="nimbus-bench")
        s3 = open_blobstore("s3://nimbus-bench/nimbus", endpoint)
        name = "records/bench.rec.gz"
        s3.put(name, os.urandom(2_000_000))
        rng = random.Random(1)
        ranges = [(at, at + 1900) for at in (rng.randrange(0, 1_990_000) for _ in range(300))]
        remote = p50_ms(lambda a, b: s3.get(name, a, b), ranges)
        with tempfile.TemporaryDirectory() as tmp:
            cache = BlockCache(s3, Path(tmp), max_bytes=10**9)
            try:
                cache.get(name, 0, 1)
                deadline = time.monotonic() + 60
                while not cache.holds(name) and time.monotonic() < deadline:
                    time.sleep(0.05)  # a benchmark waiting for the copy, not a test
                local = p50_ms(lambda a, b: cache.get(name, a, b), ranges)
            finally:
                cache.close()
        print(f"S3 (moto, loopback) ranged GET p50 {remote:.2f} ms")
        print(f"local copy (BlockCache)   read p50 {local:.3f} ms  ({remote / local:.0f}x)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
