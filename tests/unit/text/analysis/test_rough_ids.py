"""The compiled numbering of rough tokens gives what ``bytes.split`` and a dict per analysis
gave: the same tokens, numbered in order of first sight, whatever the texts hold."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.text.analysis.analyze import rough_bytes, rough_tokens
from services.text.analysis.rough_ids import RoughIds


def reference(texts: list[bytes], keys: list[str]) -> tuple[list[int], list[int], list[bytes], list[str]]:
    """Numbers by a dict keyed on (analysis, token): the definition."""
    seen: dict[tuple[str, bytes], int] = {}
    ids: list[int] = []
    counts: list[int] = []
    for text, key in zip(texts, keys, strict=True):
        tokens = text.split()
        counts.append(len(tokens))
        for token in tokens:
            ids.append(seen.setdefault((key, token), len(seen)))
    return ids, counts, [t for _, t in seen], [k for k, _ in seen]


def number_all(numbers: RoughIds, texts: list[bytes], keys: list[str]) -> tuple[list[int], list[int]]:
    ids, counts = numbers.number(texts, [numbers.key_index(k) for k in keys])
    assert ids.dtype == np.int32 and counts.dtype == np.int64
    return ids.tolist(), counts.tolist()


def test_numbers_are_those_of_split_and_a_dict_per_analysis():
    texts = [rough_bytes(t) for t in ("Flow over a wing.", "The wing, the flow!", "", "   ", "wing")]
    keys = ["en", "en", "en", "de", "de"]
    numbers = RoughIds()
    ids, counts = number_all(numbers, texts, keys)
    want_ids, want_counts, want_roughs, want_keys = reference(texts, keys)
    assert (ids, counts) == (want_ids, want_counts)
    assert numbers.roughs == want_roughs and numbers.analyses == want_keys
    # "wing" in German is another token than "wing" in English: its own number.
    assert numbers.roughs.count(b"wing") == 2 and ids[-1] == len(numbers) - 1


def test_numbering_continues_across_calls_and_grows_every_array():
    """Thousands of distinct tokens from a table of 16 slots: the table is rehashed, the
    arena and the per-number arrays grow, and a later call numbers old tokens as before."""
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzéüß0123456789_'."
    texts = [
        " ".join(
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            for _ in range(rng.randint(0, 60))
        )
        for _ in range(400)
    ]
    raw = [rough_bytes(t) for t in texts]
    keys = [rng.choice(["en", "fr", "plain"]) for _ in raw]
    numbers = RoughIds(16)
    first = number_all(numbers, raw[:150], keys[:150])
    second = number_all(numbers, raw[150:], keys[150:])
    want_ids, want_counts, want_roughs, want_keys = reference(raw, keys)
    assert first[0] + second[0] == want_ids and first[1] + second[1] == want_counts
    assert numbers.roughs == want_roughs and numbers.analyses == want_keys
    assert len(numbers) > 2000


def test_hostile_texts():
    """A 200,000-byte token, control characters and tabs, lone surrogates, scripts of every
    width: the tokens are ``rough_tokens``' own."""
    texts = [
        "x" * 200_000 + " short " + "y" * 70_000,
        "tab\tnew\nline\r\x0bvt\x0cff\x00nul\x1fus",
        "half \ud800 surrogate",
        "日本語のテキスト 中文 한국어 ไทย Ελληνικά русский",
        "x" * 200_000,  # the long token again: found, not added
    ]
    numbers = RoughIds(16)
    keys = ["plain"] * len(texts)
    ids, counts = number_all(numbers, [rough_bytes(t) for t in texts], keys)
    assert counts == [len(rough_tokens(t)) for t in texts]
    assert [numbers.roughs[i] for i in ids] == [tok for t in texts for tok in rough_tokens(t)]
    assert ids[-1] == ids[0]


def test_nothing_to_number():
    numbers = RoughIds()
    ids, counts = numbers.number([], [])
    assert ids.shape == (0,) and counts.shape == (0,) and len(numbers) == 0


@pytest.mark.parametrize("capacity", [1, 16, 1 << 12])
def test_any_starting_capacity(capacity):
    numbers = RoughIds(capacity)
    ids, _ = number_all(numbers, [b"a b c a d e f g h i j k l m n o p q r"], ["en"])
    assert [numbers.roughs[i] for i in ids] == b"a b c a d e f g h i j k l m n o p q r".split()


FALLBACK = """
import sys
from services.text.analysis import rough_ids
assert ".zip" in rough_ids.__file__
numbers = rough_ids.RoughIds(16)
ids, counts = numbers.number([b"b a b", b"c a"], [numbers.key_index("en")] * 2)
print(ids.tolist(), counts.tolist(), numbers.roughs)
"""


def test_where_numba_cannot_cache_the_numbers_come_from_python(tmp_path):
    """A task importing the kernel from a zip whose cache folder cannot be made (numba's
    ``ZipCacheLocator`` caches under ``XDG_CACHE_HOME``, here a file): the same numbers,
    in Python, and a line on stderr saying why, not a failed build."""
    import subprocess
    import sys
    import sysconfig

    from services.indexing.runner import package_zip

    shipped = package_zip(tmp_path / "p.zip")
    (tmp_path / "cache").write_text("a file, not a folder")
    env = {
        "PYTHONPATH": f"{shipped}:{sysconfig.get_paths()['purelib']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-S", "-c", FALLBACK],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[0, 1, 0, 2, 1] [3, 2] [b'b', b'a', b'c']"
    assert "numbering in Python" in out.stderr and "NotADirectoryError" in out.stderr
