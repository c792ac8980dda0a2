"""Pure scheduling logic: host spacing and slow-down, per-host workers, partitions, and the
URL normalization fast path the frontier's keys depend on."""

from __future__ import annotations

import random

from services.crawler.frontier.entries import partition_of
from services.crawler.frontier.host_queues import MIN_ERROR_DELAY, HostQueue, HostScheduler
from services.text.urls import BadUrlError, _normalize_slow, host_key, normalize_url


def test_requests_to_a_host_are_spaced_by_its_delay() -> None:
    queue: HostQueue[str] = HostQueue(delay=2.0)
    assert [queue.reserve(10.0), queue.reserve(10.0), queue.reserve(13.0)] == [0.0, 2.0, 1.0]


def test_errors_double_the_spacing_up_to_the_cap_and_successes_restore_it() -> None:
    queue: HostQueue[str] = HostQueue(delay=0.0)
    queue.failed(cap=3.0)
    assert queue.spacing == MIN_ERROR_DELAY
    for _ in range(5):
        queue.failed(cap=3.0)
    assert queue.spacing == 3.0
    steps = []
    while queue.penalty:
        queue.succeeded()
        steps.append(queue.spacing)
    assert steps == [1.5, 0.75, 0.375, 0.0]  # halved until below the first slow-down


def test_a_host_gets_at_most_per_host_workers() -> None:
    hosts: HostScheduler[int] = HostScheduler(per_host=2, max_delay=30.0)
    assert [hosts.push("h", i) for i in range(4)] == [True, True, False, False]
    assert [hosts.pop("h") for _ in range(5)] == [0, 1, 2, 3, None]
    assert hosts.queue("h").workers == 1


def test_partitions_are_stable_and_spread_hosts() -> None:
    hosts = [f"http://host{i}.test" for i in range(640)]
    parts = [partition_of(h, 64) for h in hosts]
    assert parts == [partition_of(h, 64) for h in hosts]
    assert len(set(parts)) > 48
    assert partition_of("http://a.test", 64) == 26  # CRC-32: pinned, stored rows depend on it


def test_the_fast_path_of_normalize_url_agrees_with_the_full_normalization() -> None:
    rng = random.Random(4)
    samples = [
        "http://127.0.0.1:8480/p/1",
        "http://a.test:80/x",
        "https://a.test:443/",
        "http://a.test/a/../b",
        "http://A.test/x",
        "http://a.test:99999/",
        "http://a..test/",
        "http://a.test/x?b=1&a=2",
    ]
    for _ in range(20_000):
        samples.append(
            rng.choice(["http://", "https://", "HTTP://"])
            + "".join(rng.choice("ab.-0:9") for _ in range(rng.randint(1, 8)))
            + "".join(rng.choice("/ab._~-%.?#") for _ in range(rng.randint(0, 10)))
        )
    for url in samples:
        try:
            slow = _normalize_slow(url)
        except (BadUrlError, ValueError):
            slow = "error"
        try:
            fast = normalize_url(url)
        except (BadUrlError, ValueError):
            fast = "error"
        assert fast == slow, url
        if fast != "error":
            assert host_key(fast) == f"{fast.split('://')[0]}://{fast.split('/')[2]}"
