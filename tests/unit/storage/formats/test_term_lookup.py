"""Many terms found at once in a byte-sorted dictionary (services.storage.formats.term_lookup)."""

from __future__ import annotations

import numpy as np

from services.storage.formats import term_lookup
from services.storage.formats.term_lookup import term_ids


def dictionary(terms: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(terms) + 1, np.uint64)
    offsets[1:] = np.cumsum([len(t) for t in terms])
    return np.frombuffer(b"".join(terms), np.uint8), offsets


def test_each_term_is_found_at_its_id_and_others_are_minus_one(monkeypatch) -> None:
    monkeypatch.setattr(term_lookup, "SAMPLE", 4)  # several blocks, a short last one
    terms = sorted({f"w{i:03d}".encode() for i in range(0, 300, 3)} | {"é".encode(), b"a"})
    blob, offsets = dictionary(terms)
    keys = [b"w150", b"w151", b"a", b"", "é".encode(), b"zzz", b"w297", b"w000", b"0"]
    assert term_ids(blob, offsets, keys).tolist() == [
        terms.index(b"w150"), -1, 0, -1, terms.index("é".encode()), -1, terms.index(b"w297"), 1, -1
    ]  # fmt: skip


def test_an_empty_dictionary_or_no_keys() -> None:
    blob, offsets = dictionary([])
    assert term_ids(blob, offsets, [b"a"]).tolist() == [-1]
    blob, offsets = dictionary([b"a"])
    assert term_ids(blob, offsets, []).tolist() == []
