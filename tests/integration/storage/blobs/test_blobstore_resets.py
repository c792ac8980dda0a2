"""S3 blob operations while the network resets connections: a real TCP RST, not a mock.

The crawl cluster's fault tests need blob puts to fail for a while the way they fail
when a load balancer or NAT drops connections. A proxy (tests/faultproxy.py) sits
between the blob store and moto's S3 server and resets connections on demand, so the
fault travels through urllib3, botocore's retry handler and the store's own error
translation exactly as it would in production.

What these tests pin down: botocore retries a reset put (standard retry mode, its
default: 3 attempts, jittered backoff of at most 50 ms * 2^i), so a fault shorter than
that is invisible and a longer one fails the put after exactly those attempts; the
failed put leaves nothing readable; once the fault ends, puts and gets work again; and
every operation reports a reset as a StorageError naming its blob (list() names its prefix).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.exceptions import ConnectionClosedError

from services.storage.blobs.blobstore import S3BlobStore, open_blobstore
from services.storage.errors import BlobNotFoundError, StorageError
from tests.faultproxy import ResettingProxy

# botocore's standard retry mode, its default: one attempt and two retries per call, each
# on a connection of its own once the first is reset. Every test has a client of its own:
# the mode's retry quota (500 tokens, 14 per retried connection error) is spent after about
# 17 failed calls on one client, and from then on a call is attempted once.
ATTEMPTS = 3
NAME = "content/c-000017.ncb"
WARM = "content/warm.ncb"  # stored before every fault
DATA = bytes(range(256)) * 1024  # 256 KiB: the request spans many reads of the proxy


@pytest.fixture
def botocore_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """botocore's own retry defaults, whatever this machine's AWS config or environment says:
    the attempt counts below are botocore's, not a developer's ~/.aws/config."""
    empty = tmp_path / "aws-config"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    for var in ("AWS_PROFILE", "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_DEFAULTS_MODE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def proxy(moto_server: str) -> Iterator[ResettingProxy]:
    target = urlsplit(moto_server)
    assert target.hostname and target.port
    with ResettingProxy((target.hostname, target.port)) as proxy:
        yield proxy


@pytest.fixture
def store(proxy: ResettingProxy, s3_bucket: str, botocore_defaults: None) -> S3BlobStore:
    """The blob store as the services open it, talking to moto through the proxy."""
    store = open_blobstore(f"s3://{s3_bucket}/nimbus", endpoint_url=proxy.url)
    assert isinstance(store, S3BlobStore)
    # A blob stored before the fault, which must be all the bucket holds after it. (moto's
    # server answers "Connection: close", so no connection is pooled: every attempt below
    # opens its own, and the proxy's reset of live connections is tested on its own.)
    store.put(WARM, b"warm")
    assert proxy.accepted == 1
    return store


@pytest.fixture
def stored(moto_server: str, s3_bucket: str) -> Callable[[], list[str]]:
    """The keys moto really holds, read past the proxy."""
    direct = boto3.client("s3", endpoint_url=moto_server)

    def keys() -> list[str]:
        return [obj["Key"] for obj in direct.list_objects_v2(Bucket=s3_bucket).get("Contents", [])]

    return keys


def put(store: S3BlobStore, name: str, data: bytes) -> None:
    store.put(name, data)


def put_through_writer(store: S3BlobStore, name: str, data: bytes) -> None:
    with store.writer(name) as fh:
        fh.write(data)


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


@pytest.mark.parametrize("write", [put, put_through_writer], ids=["put", "writer"])
def test_a_put_during_resets_is_retried_then_fails_and_stores_nothing(store, proxy, stored, write):
    proxy.start_resetting()
    with pytest.raises(StorageError, match=re.escape(NAME)) as raised:
        write(store, NAME, DATA)

    # A real reset, seen by botocore as a connection closed mid-request, on every attempt.
    assert not isinstance(raised.value, BlobNotFoundError)
    assert isinstance(raised.value.__cause__, ConnectionClosedError), exception_chain(raised.value)
    assert proxy.resets == ATTEMPTS
    assert proxy.accepted == 1 + ATTEMPTS  # the warm put's connection, then one per attempt

    proxy.stop_resetting()
    assert stored() == [f"nimbus/{WARM}"]
    assert not store.exists(NAME)
    with pytest.raises(BlobNotFoundError):
        store.get(NAME)

    write(store, NAME, DATA)
    assert store.get(NAME) == DATA
    assert store.get(NAME, 1000, 1010) == DATA[1000:1010]
    assert proxy.resets == ATTEMPTS


def test_a_fault_shorter_than_the_retries_is_invisible(store, proxy):
    proxy.reset_for(ATTEMPTS - 1)
    store.put(NAME, DATA)
    assert proxy.resets == ATTEMPTS - 1 and not proxy.resetting
    assert store.get(NAME) == DATA


def test_a_request_cut_off_mid_body_stores_nothing(store, proxy, stored):
    # The cut is inside the body (headers are well under 64 KiB). A cut inside the headers
    # is no test of the store: moto's HTTP server takes the end of the stream for the end of
    # the headers and stores an empty object, which S3 would not.
    proxy.start_resetting(after_bytes=64 * 1024)
    with pytest.raises(StorageError, match=re.escape(NAME)) as raised:
        store.put(NAME, DATA)
    assert isinstance(raised.value.__cause__, ConnectionClosedError), exception_chain(raised.value)
    assert proxy.resets == ATTEMPTS
    proxy.stop_resetting()
    assert stored() == [f"nimbus/{WARM}"]
    assert not store.exists(NAME)


def _list(store: S3BlobStore) -> object:
    return list(store.list("content/"))


@pytest.mark.parametrize(
    ("operation", "names"),
    [
        pytest.param(lambda s: put(s, NAME, DATA), NAME, id="put"),
        pytest.param(lambda s: put_through_writer(s, NAME, DATA), NAME, id="writer"),
        pytest.param(lambda s: s.get(WARM), WARM, id="get"),
        pytest.param(lambda s: s.size(WARM), WARM, id="size"),
        # A network fault must not pass for a missing blob: exists() must raise, not say False.
        pytest.param(lambda s: s.exists(WARM), WARM, id="exists"),
        pytest.param(lambda s: s.delete(WARM), WARM, id="delete"),
        pytest.param(_list, "content/", id="list"),
    ],
)
def test_a_reset_is_a_storage_error_naming_the_blob(store, proxy, operation, names):
    proxy.start_resetting()
    with pytest.raises(StorageError) as raised:
        operation(store)
    assert names in str(raised.value)
    assert not isinstance(raised.value, BlobNotFoundError)  # a fault, not a missing blob
    assert proxy.resets == ATTEMPTS
