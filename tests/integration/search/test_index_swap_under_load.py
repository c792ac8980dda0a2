"""New index versions swap in while requests are running: none fails, none sees half a version."""

from __future__ import annotations

import threading

from services.search.service import SearchService
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index
from tests.polling import wait_for

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
    versions: list[int] = []
    try:
        for n in range(2, 8):
            versions.append(publish_index(settings, DOCS, f"v{n}"))
            # The hammers are mid-request; wait until they are answered from the new version.
            wait_for(
                lambda: versions[-1] in seen or bool(errors), what=f"answers from version {versions[-1]}"
            )
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        service.close()
    assert not errors, errors[0]
    assert not any(t.is_alive() for t in threads)
    assert set(versions) <= seen <= {1, *versions}  # every version served, nothing half-made
