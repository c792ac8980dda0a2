"""benchmarks.kernel_ab's pure parts: a kernel read from a git revision, results compared."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.kernel_ab import KERNELS, kernel_at, same_result
from services import compiled


def test_a_kernel_is_read_from_a_revision_and_from_the_working_tree(tmp_path: Path) -> None:
    before = list(compiled.KERNELS)
    for rev in ("HEAD", None):
        loaded = kernel_at(KERNELS["count"], rev, tmp_path)
        assert loaded.fn.__name__ == "lead_count"  # type: ignore[attr-defined]  # not compiled: no call
    assert len(list(tmp_path.glob("*match_count.py"))) == 2  # one module file per revision
    # The copies are not this process's search kernels (`nimbus warm-kernels` reports those).
    assert before == compiled.KERNELS


def test_top_k_results_agree_in_any_heap_order_and_not_otherwise() -> None:
    docs, final, text = np.array([5, 2, 9]), np.array([1.5, 3.0, 0.5]), np.array([1.0, 2.0, 0.4])
    order = np.array([2, 0, 1])
    a = (docs, final, text, 7, True)  # the OR kernel's: candidates met, exact
    assert same_result(a, (docs[order], final[order], text[order], 7, True))
    assert not same_result(a, (docs, final, text, 8, True))  # another count, both exact
    assert same_result(a, (docs, final, text, 5, False))  # pruned elsewhere: the count recounts
    assert not same_result(a, (docs, np.array([1.5, 3.0, 0.25]), text, 7, True))  # a score differs
    assert not same_result(a, (np.array([5, 2, 8]), final, text, 7, True))  # a document differs
    assert not same_result((docs, final, text, 7), (docs, final, text, 6))  # the AND's matches
    assert same_result(12, 12) and not same_result(12, 13)  # a count
