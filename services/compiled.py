"""Kernels compiled with numba when first called, not when their module is imported, each
for one signature.

The index build's MapReduce tasks import the ground floor (segment formats, analysis) but
never run the kernels a search runs; numba's import alone costs a task about 0.3 s and
60 MB. The one kernel of their own (``compiled_for_jobs``: numbering rough tokens,
``services.text.analysis.rough_ids``) runs only where its cache outlives a build (this
machine's runners: ``services.indexing.runner``) and is not one of ``KERNELS``, which
``nimbus warm-kernels`` readies for search.

A kernel is written as a plain function over arrays and scalars, wrapped here, and
compiled once per process on its first call: from numba's disk cache after the first
time (``cache=True``; the deployment's units point ``NUMBA_CACHE_DIR`` where the service
may write). Search warms its kernels when a segment opens, so no query pays the compile, and
an instance's bootstrap fills that cache before the service first starts (``nimbus
warm-kernels``, ``services.search.retrieval.kernel_cache``).

numba compiles a kernel again for every new combination of argument types, and an array's
type includes whether it is writable: a segment's memory-mapped arrays are read-only, the
arrays a query builds are not. A warm-up that passed only arrays of its own compiled a
signature no query used, and a fresh install's first OR query compiled the kernel again
(20-40 s on this machine's 2 cores). So a warm-up passes ``as_mapped`` arrays where a query
passes a segment's, and the kernels keep one signature (a test checks it). Making every
argument read-only per call instead cost 1.5 µs an array (numpy's flags object): 30 µs a
query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# Every search kernel defined so far (its module imported), in definition order: what
# ``nimbus warm-kernels`` readies and reports on. The index job's: JOB_KERNELS.
KERNELS: list[CompiledOnFirstUse] = []
JOB_KERNELS: list[CompiledOnFirstUse] = []


@dataclass(frozen=True)
class CacheUse:
    """How one kernel came to be ready in this process."""

    name: str  # module.function
    loaded: int  # signatures numba's disk cache gave
    compiled: int  # signatures compiled here (and saved to the cache)
    cache_path: str | None  # the folder of its cache files; None before its first call


def as_mapped(array: np.ndarray) -> np.ndarray:
    """``array`` as a segment's memory map presents it to a kernel: a read-only view."""
    view = array.view()
    view.flags.writeable = False
    return view


class CompiledOnFirstUse:
    """``fn`` compiled by numba (``njit``, no Python objects, the GIL released) on first call."""

    def __init__(self, fn: Callable[..., Any], registry: list[CompiledOnFirstUse] = KERNELS) -> None:
        self.fn = fn  # the plain function: what a reader reads, what the compiler compiles
        self._compiled: Callable[..., Any] | None = None
        registry.append(self)

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            from numba import njit

            self._compiled = njit(cache=True, nogil=True)(self.fn)
        return self._compiled(*args)

    @property
    def signatures(self) -> list[Any]:
        """The signatures compiled so far (one, once warmed up)."""
        return [] if self._compiled is None else list(getattr(self._compiled, "signatures", []))

    def cache_use(self) -> CacheUse:
        """Signatures loaded from numba's disk cache and compiled in this process, so far."""
        name = f"{self.fn.__module__}.{self.fn.__qualname__}"
        if self._compiled is None:
            return CacheUse(name, 0, 0, None)
        stats = self._compiled.stats  # type: ignore[attr-defined]  # numba's Dispatcher
        return CacheUse(
            name, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()), stats.cache_path
        )


def compiled_on_first_use(fn: Callable[..., Any]) -> CompiledOnFirstUse:
    return CompiledOnFirstUse(fn)


def compiled_for_jobs(fn: Callable[..., Any]) -> CompiledOnFirstUse:
    """A kernel of the index job's tasks: compiled on first use like a search kernel, but not
    one that search warms."""
    return CompiledOnFirstUse(fn, JOB_KERNELS)
