"""The search kernels made ready ahead of the service (``nimbus warm-kernels``): loaded from
numba's disk cache, or compiled into it, and what that took.

Without it a new search instance compiles every kernel when its first segment opens
(``segment.warm_kernels``), each uvicorn worker at once: 50-95 s on an instance before
``/healthz`` answers. The bootstrap runs this right after installing a release, as the
service's user and with the service's ``NUMBA_CACHE_DIR``: numba keys its cache by the kernel's
source file (its path and bytes) and the CPU, so the same installed release on the same machine
is what fills it usefully, and the service's first start then loads every kernel.
"""

from __future__ import annotations

import getpass
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from services.compiled import KERNELS, CacheUse
from services.search.errors import KernelCacheError
from services.search.retrieval.segment import warm_kernels, warm_or_kernels, warm_other_kernels


@dataclass(frozen=True)
class KernelReport:
    """Every kernel's way to readiness in one warm-up, and the time they took together."""

    uses: tuple[CacheUse, ...]
    seconds: float
    cache_dir: str  # NUMBA_CACHE_DIR, "" when unset (numba then caches beside the sources)

    @property
    def loaded(self) -> int:
        return sum(use.loaded for use in self.uses)

    @property
    def compiled(self) -> list[str]:
        """The kernels that were not in the cache (compiled, and saved to it, here)."""
        return [use.name for use in self.uses if use.compiled]

    def summary(self) -> str:
        where = self.cache_dir or f"beside the sources, NUMBA_CACHE_DIR unset ({self.uses[0].cache_path})"
        return (
            f"{len(self.uses)} search kernels ready in {self.seconds:.1f} s: {self.loaded} signatures "
            f"loaded from numba's cache, {len(self.compiled)} kernels compiled into it ({where})"
        )


def warm_kernel_cache(helper: bool = True) -> KernelReport:
    """Load or compile every query kernel (what a segment's open does), then check that each
    one is cached where the service will look: in ``NUMBA_CACHE_DIR`` when it is set. numba
    falls back to another folder without a word when that one is not writable; the service's
    first start would then compile everything again.

    With ``helper``, the OR top-k's kernels (about two thirds of the compile: ~47 of ~70 s on this
    machine) are compiled into the cache by a second process while this one compiles the
    others, then loaded here: numba compiles one kernel at a time per process, and an
    instance's bootstrap waits for all of them."""
    from numba import config

    before = {id(kernel): kernel.cache_use() for kernel in KERNELS}
    started = time.monotonic()
    helped: dict[str, CacheUse] = {}
    if helper:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            beside = pool.submit(_warm_or_kernels_here)
            warm_other_kernels()
            helped = beside.result()
    warm_kernels()  # the helper's loaded from the cache, the others already in memory
    seconds = time.monotonic() - started
    uses = tuple(
        _with_helper(_since(kernel.cache_use(), before.get(id(kernel))), helped) for kernel in KERNELS
    )
    cache_dir = str(getattr(config, "CACHE_DIR", ""))  # NUMBA_CACHE_DIR, as numba read it
    report = KernelReport(uses, seconds, cache_dir)
    missed = [use.name for use in report.uses if use.cache_path is None]
    if missed:
        raise KernelCacheError(
            f"warm_kernels() never calls {', '.join(missed)}: a query would compile it; "
            "warm it there (services/search/retrieval/segment.py)"
        )
    if report.cache_dir:
        root = Path(report.cache_dir).resolve()
        elsewhere = sorted(
            {
                str(use.cache_path)
                for use in report.uses
                if not Path(str(use.cache_path)).resolve().is_relative_to(root)
            }
        )
        if elsewhere:
            raise KernelCacheError(
                f"numba cached the search kernels in {', '.join(elsewhere)}, not in "
                f"NUMBA_CACHE_DIR={report.cache_dir}: user {getpass.getuser()} cannot write there; "
                "give the folder to the service's user and run `nimbus warm-kernels` again"
            )
    return report


def _since(now: CacheUse, then: CacheUse | None) -> CacheUse:
    """What this warm-up did (numba counts from the process's start): a kernel already in
    memory was neither loaded nor compiled again."""
    if then is None:
        return now
    return replace(now, loaded=now.loaded - then.loaded, compiled=now.compiled - then.compiled)


def _warm_or_kernels_here() -> dict[str, CacheUse]:
    """``warm_or_kernels`` in a helper process: what each kernel took there, by name."""
    warm_or_kernels()
    return {use.name: use for use in (kernel.cache_use() for kernel in KERNELS) if use.cache_path is not None}


def _with_helper(use: CacheUse, helped: dict[str, CacheUse]) -> CacheUse:
    """A kernel the helper compiled was not in the cache before this run: said compiled, not
    loaded (this process loaded what the helper saved)."""
    there = helped.get(use.name)
    if there is None or not there.compiled:
        return use
    return replace(use, loaded=max(use.loaded - there.compiled, 0), compiled=use.compiled + there.compiled)
