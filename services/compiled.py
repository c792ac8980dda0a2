"""Kernels compiled with numba when first called, not when their module is imported.

The index build's MapReduce tasks import the ground floor (segment formats, analysis) but
never run the kernels a search runs; numba's import alone costs a task about 0.3 s and
60 MB. A kernel is written as a plain function over arrays and scalars, wrapped here, and
compiled once per process on its first call: from numba's disk cache after the first
time (``cache=True``; the deployment's units point ``NUMBA_CACHE_DIR`` where the service
may write). Search warms its kernels when a segment opens, so no query pays the compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CompiledOnFirstUse:
    """``fn`` compiled by numba (``njit``, no Python objects, the GIL released) on first call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn  # the plain function: what a reader reads, what the compiler compiles
        self._compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            from numba import njit

            self._compiled = njit(cache=True, nogil=True)(self.fn)
        return self._compiled(*args)


def compiled_on_first_use(fn: Callable[..., Any]) -> CompiledOnFirstUse:
    return CompiledOnFirstUse(fn)
