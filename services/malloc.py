"""glibc allocator settings for processes that allocate and free large numpy arrays.

glibc hands memory back to the kernel when a block above the mmap threshold
(128 KB, adjusted at run time) is freed, or when the free space at the top of
the heap passes the trim threshold; the next allocation then faults the same
pages in again, at a page fault per 4 KB: a query's per-document table and
an index map task's flush buffers pay that on every use (figures in
docs/performance-notes.md). Raising both thresholds keeps freed memory in the
process for the next array; a process still gives it all back when it exits.

The same settings reach a process either as ``MALLOC_*`` environment
variables read when it starts (``malloc_env``: mrjob's task processes) or
through ``mallopt`` at run time (``keep_freed_memory``: the search service).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest allowed mmap threshold on 64-bit systems
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # mallopt's parameter numbers


def malloc_env(trim_threshold: int, top_pad: int) -> dict[str, str]:
    """The environment variables that give a new process these settings."""
    return {
        "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_MAX),
        "MALLOC_TRIM_THRESHOLD_": str(trim_threshold),
        "MALLOC_TOP_PAD_": str(top_pad),
    }


def keep_freed_memory(trim_threshold: int = 1 << 30, top_pad: int = 64 << 20) -> bool:
    """Apply the settings to this process; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
    return all(
        mallopt(param, value) == 1
        for param, value in (
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX),
            (_M_TRIM_THRESHOLD, trim_threshold),
            (_M_TOP_PAD, top_pad),
        )
    )


def give_back_freed_memory() -> bool:
    """Return the free memory of every malloc arena to the kernel (glibc's ``malloc_trim``),
    False where the C library is not glibc. A thread's allocations come from an arena of its
    own, whose freed memory the other threads cannot reuse: after a worker thread's last large
    temporaries are gone it is still counted as this process's (its RSS)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (looked up once: ``find_library`` runs ldconfig)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim
