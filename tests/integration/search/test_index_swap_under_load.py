"""New index versions swap in while requests are running: none fails, none sees half a version."""

from __future__ import annotations

import threading

from search_corpus import Doc, commit_documents, publish_index

from services.search.service import SearchService

DOCS = [Doc(f"http://s.test/{i}", f"Wing {i}", f"Wing lift drag number {i}.") for i in range(20)]


def test_requests_in_flight_survive_repeated_swaps(settings):
    commit_documents(settings, DOCS, 0, "c1")
    publish_index(settings, DOCS, "v1")
    service = SearchService(settings, recheck_seconds=0.0)  # look for a new version per request
    errors: list[BaseException] = []
    seen: set[int] = set()
    stop = threading.Event()

    def hammer() -> None:
        try:
            while not stop.is_set():
                results = service.search("wing lift")
                assert results.total == len(DOCS) and len(results.hits) == 10
                assert all(h.title.startswith("Wing") for h in results.hits)
                seen.add(results.index_version)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        versions = [publish_index(settings, DOCS, f"v{n}") for n in range(2, 8)]
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        service.close()
    assert not errors, errors[0]
    assert len(seen) >= 2 and seen <= {1, *versions}  # answers came from several versions
