"""Rough tokens numbered in one compiled pass: the index job's hottest loop.

The index job cuts each field's text into rough tokens (``analyze.rough_bytes``: the
normalised text's UTF-8 with every ASCII separator made a space) and numbers each distinct
rough token of an analysis once, so the word regex, stop list and stemmer run per distinct
token, not per occurrence (``mapreduce.postings``). Done in Python, ``bytes.split`` made an
object per token and a dict lookup numbered it: 0.8 s of a map task's 2.9 s per 10,000
pages of the benchmark corpus (5.4 million tokens, 48,000 distinct), the largest single cost
of the build. Here one numba kernel scans the bytes of many fields at once, hashes each
token (FNV-1a, finished by splitmix64's mixer so the table's low bits are well spread) and
finds its number in an open-addressing table (linear probing, at most half full); a hit is
confirmed on the token's bytes, its length and its analysis, so two tokens never share a
number, whatever their hashes.

The kernel never reallocates an array: it returns before a new token it has no room for,
and Python grows the arrays (or rehashes the table, a second small kernel) and calls it again
from that token. Growing them inside it made numba reload every array's shape and data
pointer in the inner loop: 0.41 against 0.20 s a block of 10,000 pages.

``RoughIds`` keeps the table between calls: numbers count up over a whole buffer of the
index job, in order of first sight, as ``bytes.split`` and a dict gave them; ``roughs`` is
each number's token (bytes) and ``analyses`` its analysis.
"""

from __future__ import annotations

import sys
from array import array

import numpy as np

from services.compiled import compiled_for_jobs

_EMPTY = -1


class RoughIds:
    """Distinct rough token -> number, per analysis, for one buffer of the index job."""

    def __init__(self, capacity: int = 1 << 12, *, compiled: bool = True) -> None:
        self.compiled = compiled  # False: bytes.split and a dict (where numba would compile per task)
        capacity = 1 << max(int(capacity - 1).bit_length(), 4)
        # Slots of (hash, number, the token's start in the arena, its length | analysis << 40).
        self._table = np.full((capacity, 4), _EMPTY, dtype=np.int64)
        # Each number's token starts in the arena; the tokens are appended there in the order
        # of their numbers, so each one ends where the next one starts (the last at ``_used``).
        self._starts = np.zeros(capacity // 2, dtype=np.int64)
        self._keys = np.zeros(capacity // 2, dtype=np.int32)  # its analysis, as an index
        self._arena = np.zeros(1 << 16, dtype=np.uint8)  # the distinct tokens' bytes
        self._used = 0
        self.roughs: list[bytes] = []  # each number's rough token
        self.analyses: list[str] = []  # and its analysis
        self._key_index: dict[str, int] = {}
        self._seen: dict[int, _Numbers] = {}  # the Python numbering's tables, per analysis

    def __len__(self) -> int:
        return len(self.roughs)

    @property
    def analysis_names(self) -> list[str]:
        """The analyses seen, in the order of their indexes."""
        return list(self._key_index)

    def key_index(self, analysis: str) -> int:
        """The small integer the kernel knows ``analysis`` by."""
        index = self._key_index.get(analysis)
        if index is None:
            index = self._key_index[analysis] = len(self._key_index)
        return index

    def number(self, texts: list[bytes], keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(the number of every rough token of ``texts`` in order, int32; how many each text
        holds, int64). ``texts``: rough bytes (``analyze.rough_bytes``), each cut at spaces;
        ``keys``: each one's analysis (``key_index``)."""
        if not texts:
            return np.zeros(0, np.int32), np.zeros(0, np.int64)
        if not (self.compiled and kernels_usable()):
            return self._number_in_python(texts, keys)
        buf = np.frombuffer(b"".join(texts), dtype=np.uint8)
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        key_array = np.asarray(keys, dtype=np.int32)
        # A text of b bytes holds at most (b + 1) // 2 tokens.
        ids = np.empty((buf.shape[0] + len(texts)) // 2 + len(texts), dtype=np.int32)
        counts = np.zeros(len(texts), dtype=np.int64)
        before = n = len(self.roughs)
        text = at = in_text = m = 0
        while True:
            # The kernel returns when it is done, or before a new token it has no room for
            # (its arrays are never reallocated inside it: that halved its speed).
            text, at, in_text, m, self._used, n, need = _number(
                buf, ends, key_array, text, at, in_text, m, ids, counts,
                self._table, self._starts, self._keys, self._arena, self._used, n,
            )  # fmt: skip
            if text == len(texts):
                break
            self._make_room(n, need)
        starts = self._starts[before : n + 1].tolist()
        if starts:
            starts[-1] = self._used
        names = self.analysis_names
        arena = self._arena
        for start, end, key in zip(starts[:-1], starts[1:], self._keys[before:n].tolist(), strict=True):
            self.roughs.append(arena[start:end].tobytes())
            self.analyses.append(names[key])
        # The bound above is ~3x the tokens: keep no more than they need until the buffer drains.
        return (ids[:m].copy() if 2 * m < ids.shape[0] else ids[:m]), counts

    def _number_tiny(self) -> None:
        """One kernel call on one token: compiles the kernel (or loads it) without the check."""
        ids, counts = np.empty(2, np.int32), np.zeros(1, np.int64)
        buf = np.frombuffer(b"warm", dtype=np.uint8)
        _number(buf, np.array([4], np.int64), np.zeros(1, np.int32), 0, 0, 0, 0, ids, counts,
                self._table, self._starts, self._keys, self._arena, self._used, 0)  # fmt: skip

    def _make_room(self, n: int, need: int) -> None:
        """Room for one more token of ``need`` bytes: twice the numbers, the arena at least
        twice, or the table rehashed into twice the slots (it is kept at most half full)."""
        if n + 1 >= self._starts.shape[0]:
            self._starts = np.concatenate([self._starts, np.zeros_like(self._starts)])
            self._keys = np.concatenate([self._keys, np.zeros_like(self._keys)])
        if self._used + need > self._arena.shape[0]:
            grown = np.zeros(max(2 * self._arena.shape[0], self._used + need), dtype=np.uint8)
            grown[: self._used] = self._arena[: self._used]
            self._arena = grown
        if 2 * (n + 1) > self._table.shape[0]:
            grown_table = np.full((2 * self._table.shape[0], 4), _EMPTY, dtype=np.int64)
            _rehash(self._table, grown_table)
            self._table = grown_table

    def _number_in_python(self, texts: list[bytes], keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The same numbers by ``bytes.split`` and a dict per analysis (``split`` cuts at every
        ASCII space, the kernel at 0x20 only: the same cuts for rough bytes, which hold no
        other)."""
        names = self.analysis_names
        ids = array("i")
        counts = np.empty(len(texts), dtype=np.int64)
        for n, (text, key) in enumerate(zip(texts, keys, strict=True)):
            tokens = text.split()
            counts[n] = len(tokens)
            seen = self._seen.get(key)
            if seen is None:
                seen = self._seen[key] = _Numbers(names[key], self.roughs, self.analyses)
            ids.extend(map(seen.__getitem__, tokens))
        return np.frombuffer(ids, dtype=np.intc).astype(np.int32, copy=False), counts


class _Numbers(dict[bytes, int]):
    """Rough token -> number, for one analysis: ``__missing__`` runs once per new token, so
    ``map`` over a text's tokens stays in C."""

    def __init__(self, analysis: str, roughs: list[bytes], analyses: list[str]) -> None:
        super().__init__()
        self.analysis = analysis
        self.roughs = roughs
        self.analyses = analyses

    def __missing__(self, rough: bytes) -> int:
        self[rough] = n = len(self.roughs)
        self.roughs.append(rough)
        self.analyses.append(self.analysis)
        return n


_KERNELS: dict[str, str] = {}  # "usable": "yes", or why not (this process's first try)


def kernels_usable() -> bool:
    """Whether the kernels compiled (or loaded from numba's cache) in this process. The first
    call compiles both; where numba cannot write its cache (a home folder not writable, a
    cache path that is a file) that fails, and this process numbers in Python instead, with
    the same numbers, saying why once on stderr (a task's log) rather than failing the build.
    The job's other kernels (``forms.filters_in_document_order``, ``mapreduce.postings_kernels``)
    are used only where these are: the same cache decides them all."""
    if "usable" not in _KERNELS:
        try:
            table = np.full((16, 4), _EMPTY, dtype=np.int64)
            _rehash(table, np.full((32, 4), _EMPTY, dtype=np.int64))
            RoughIds(16)._number_tiny()
            _KERNELS["usable"] = "yes"
        except (OSError, RuntimeError) as exc:  # numba's cache: no writable place, or a save refused
            _KERNELS["usable"] = f"{type(exc).__name__}: {exc}"
            print(
                f"rough_ids: the compiled numbering is unusable here ({_KERNELS['usable']}); "
                "numbering in Python (same numbers, slower): let this user write numba's cache",
                file=sys.stderr,
            )
    return _KERNELS["usable"] == "yes"


@compiled_for_jobs
def _number(buf, ends, keys, text, at, in_text, m, ids, counts, table, starts, key_of, arena, used, n):  # type: ignore[no-untyped-def]
    """The kernel of ``RoughIds.number``, from byte ``at`` of text ``text`` (``in_text`` of
    whose tokens are numbered already, ``m`` of all). Returns where it stopped (the text, the
    byte, the tokens numbered in that text and in all), the arena's use, the numbers given,
    and the bytes of the token it had no room for (0: done)."""
    mask = table.shape[0] - 1
    i = at
    c = in_text
    for s in range(text, ends.shape[0]):
        end = ends[s]
        key = keys[s]
        while i < end:
            while i < end and buf[i] == 0x20:
                i += 1
            if i >= end:
                break
            j = i
            h = np.uint64(0xCBF29CE484222325) ^ np.uint64(key)
            while j < end and buf[j] != 0x20:
                h = (h ^ np.uint64(buf[j])) * np.uint64(0x100000001B3)
                j += 1
            # splitmix64's finaliser: FNV's low bits alone cluster in a power-of-two table.
            h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h = h ^ (h >> np.uint64(31))
            hashed = np.int64(h)
            length = j - i
            tag = np.int64(length) | (np.int64(key) << 40)  # a token's length and analysis
            slot = np.int64(h & np.uint64(mask))
            while True:
                d = table[slot, 1]
                if d < 0:  # a new token: its bytes into the arena, its number into the table
                    if (
                        n + 1 >= starts.shape[0]
                        or used + length > arena.shape[0]
                        or 2 * (n + 1) > table.shape[0]
                    ):
                        counts[s] = c
                        return s, i, c, m, used, n, length
                    arena[used : used + length] = buf[i:j]
                    starts[n] = used
                    key_of[n] = key
                    table[slot, 0] = hashed
                    table[slot, 1] = n
                    table[slot, 2] = used
                    table[slot, 3] = tag
                    used += length
                    d = n
                    n += 1
                    break
                # One slot (32 bytes) holds what a hit is checked on: hash, length and
                # analysis, and where the token's bytes are.
                if table[slot, 0] == hashed and table[slot, 3] == tag:
                    a = table[slot, 2]
                    same = True
                    for x in range(length):
                        if arena[a + x] != buf[i + x]:
                            same = False
                            break
                    if same:
                        break
                slot = (slot + 1) & mask
            ids[m] = d
            m += 1
            c += 1
            i = j
        counts[s] = c
        c = 0
        i = end
    return ends.shape[0], i, 0, m, used, n, 0


@compiled_for_jobs
def _rehash(table, grown):  # type: ignore[no-untyped-def]
    """``table``'s slots into ``grown`` (a power of two, at least as large), probing linearly."""
    mask = grown.shape[0] - 1
    for e in range(table.shape[0]):
        if table[e, 1] >= 0:
            p = np.int64(np.uint64(table[e, 0]) & np.uint64(mask))
            while grown[p, 1] >= 0:
                p = (p + 1) & mask
            for f in range(4):
                grown[p, f] = table[e, f]
