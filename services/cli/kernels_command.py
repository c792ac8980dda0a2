"""`nimbus warm-kernels`: the search kernels into numba's disk cache before the service starts."""

from __future__ import annotations

import argparse

from services.cli.parsing import leaf
from services.config import Settings
from services.search.errors import KernelCacheError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus warm-kernels``."""
    warm = commands.add_parser(
        "warm-kernels",
        help="compile the search kernels into numba's disk cache",
        description="Load every compiled search kernel from numba's disk cache (NUMBA_CACHE_DIR), "
        "compiling into it the ones it lacks, as a segment's open would: run it as the search "
        "service's user, with the service's NUMBA_CACHE_DIR, after installing a release (the "
        "instance bootstrap does), and the service's first start compiles nothing. Exit 1 when "
        "the kernels could not be cached there.",
    )
    warm.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when any kernel was not in the cache already (it is compiled into it all the same)",
    )
    leaf(warm, warm_kernels)


def warm_kernels(args: argparse.Namespace, settings: Settings) -> int:
    from services.search.retrieval.kernel_cache import warm_kernel_cache

    report = warm_kernel_cache()
    print(report.summary(), flush=True)
    if args.check and report.compiled:
        raise KernelCacheError(f"not in numba's cache before this run: {', '.join(report.compiled)}")
    return 0
