"""One search kernel at two revisions, on every call the benchmark's queries make: hot and cold.

    .venv/bin/python -m benchmarks.kernel_ab --kernel or --old REV [--new REV] [--passes 5]

The calls are recorded by running the ``benchmarks.index`` corpus's queries, as typed and with
``OR`` between the words, through ``SearchService.ranked`` on its published Nimbus state
(``var/bench``: run ``benchmarks.index`` first). Each revision's kernel module is read from
git (``--new`` omitted: the working tree's) and compiled apart; every recorded call is run by
both, their results compared, and timed two ways, each call's figure the fastest of
``--passes``:

* **hot**: each call run twice by one side, then twice by the other, the second run timed (its
  lists in the CPU's caches: a replica whose common queries repeat);
* **cold**: whole passes over all the calls in the benchmark's order, the sides alternating
  pass by pass (each call's lists evicted by the others since its last run, as in
  ``benchmarks.index``).

The two disagree where a change trades a branch for a data dependency: a search whose next
read waits for a select loses the reads the CPU starts ahead on a predicted branch, which is
what a search of lists not in cache costs (docs/benchmarks.md, stop 41). Only the cold figure
says what ``benchmarks.index`` will see.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks.index import load_queries
from services import compiled

ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL = "services/search/retrieval"


@dataclass(frozen=True)
class Kernel:
    """Where a kernel lives and where the search path calls it from."""

    path: str  # its module's file in the repository
    function: str
    caller: str  # the module whose global name the search path calls it by


KERNELS = {
    "or": Kernel(f"{RETRIEVAL}/blockmax_kernels.py", "window_top_k", "services.search.retrieval.blockmax"),
    "count": Kernel(f"{RETRIEVAL}/match_count.py", "lead_count", "services.search.retrieval.blockmax"),
    "and": Kernel(f"{RETRIEVAL}/conjunction_kernel.py", "and_top_k", "services.search.retrieval.conjunction"),
}


def kernel_at(kernel: Kernel, rev: str | None, folder: Path) -> Callable[..., Any]:
    """``kernel``'s function as revision ``rev`` (None: the working tree) wrote it, from a module
    of its own (its file copied to ``folder``: numba caches a kernel by its file)."""
    if rev is None:
        source = (ROOT / kernel.path).read_text(encoding="utf-8")
    else:
        source = subprocess.run(
            ["git", "show", f"{rev}:{kernel.path}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    name = f"kernel_ab_{(rev or 'tree').replace('/', '_').replace('~', '_').replace('^', '_')}"
    path = folder / f"{name}_{Path(kernel.path).name}"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"kernel_ab: cannot load {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    registered = list(compiled.KERNELS)
    spec.loader.exec_module(module)
    # Not this process's search kernels: `nimbus warm-kernels` (and its tests) report every
    # registered one and would name these copies as kernels no warm-up reaches.
    compiled.KERNELS[:] = registered
    function: Callable[..., Any] = getattr(module, kernel.function)
    return function


def same_result(a: Any, b: Any) -> bool:
    """Whether two calls' results agree: the top-k kernels' documents and scores as sets of
    (document, score) (their heaps' order is not the ranking's); the AND kernel's count of
    matches; the OR kernel's count where both say it is exact (it counts the candidates it
    met, which depends on what it pruned: where it is not exact the match count recounts);
    anything else as is."""
    if isinstance(a, tuple) and len(a) >= 2 and isinstance(a[0], np.ndarray):
        first = sorted(zip(a[0].tolist(), a[1].tolist(), strict=True))
        second = sorted(zip(b[0].tolist(), b[1].tolist(), strict=True))
        if first != second:
            return False
        if len(a) == 4:  # (documents, scores, text scores, matches)
            return int(a[3]) == int(b[3])
        if len(a) == 5:  # (..., candidates met, exact)
            return not (a[4] and b[4]) or int(a[3]) == int(b[3])
        return True
    return bool(a == b)


def record_calls(kernel: Kernel, work: Path, docs: int) -> list[tuple[Any, ...]]:
    """Every call the search path makes to ``kernel`` for the corpus's queries, typed and ORed."""
    import importlib

    from services.config import Settings
    from services.eval.run import state_settings
    from services.search.service import SearchService

    queries = load_queries(work / f"corpus-{docs}")
    service = SearchService(state_settings(Settings.from_env({}), work / "nimbus-state"))
    caller = importlib.import_module(kernel.caller)
    real = getattr(caller, kernel.function)
    calls: list[tuple[Any, ...]] = []

    def recording(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    service.ranked(queries[0], 10)  # the segment opened and its kernels warmed before recording
    setattr(caller, kernel.function, recording)
    try:
        for q in queries:
            service.ranked(q, 10)
        for q in queries:
            service.ranked(" OR ".join(q.split()), 10)
    finally:
        setattr(caller, kernel.function, real)
        service.close()
    return calls


def timed(
    old: Callable[..., Any], new: Callable[..., Any], calls: Sequence[tuple[Any, ...]], passes: int
) -> dict[str, float]:
    """Seconds in all, each call's fastest of ``passes``: hot (old and new on a call in turn)
    and cold (whole passes, old and new alternating)."""
    hot = {"old": [float("inf")] * len(calls), "new": [float("inf")] * len(calls)}
    cold = {"old": [float("inf")] * len(calls), "new": [float("inf")] * len(calls)}
    for _ in range(passes):
        for i, args in enumerate(calls):
            for label, f in (("old", old), ("new", new)):
                f(*args)  # its lists into the caches: timing the first run favoured the side after
                start = time.perf_counter()
                f(*args)
                hot[label][i] = min(hot[label][i], time.perf_counter() - start)
    for _ in range(passes):
        for label, f in (("old", old), ("new", new)):
            best = cold[label]
            for i, args in enumerate(calls):
                start = time.perf_counter()
                f(*args)
                best[i] = min(best[i], time.perf_counter() - start)
    return {
        f"{how}_{label}": sum(times[label])
        for how, times in (("hot", hot), ("cold", cold))
        for label in times
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", choices=sorted(KERNELS), required=True)
    p.add_argument("--old", required=True, help="git revision of the kernel timed first")
    p.add_argument("--new", help="git revision of the other (default: the working tree)")
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--docs", type=int, default=100_000, help="the benchmarks.index corpus (its size)")
    p.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = p.parse_args(argv)
    if not (args.work / "nimbus-state").is_dir():
        raise SystemExit(f"kernel_ab: no Nimbus state in {args.work}: run `python -m benchmarks.index` first")
    kernel = KERNELS[args.kernel]
    calls = record_calls(kernel, args.work, args.docs)
    with tempfile.TemporaryDirectory(prefix="kernel-ab-") as tmp:
        sys.path.insert(0, str(ROOT))
        old = kernel_at(kernel, args.old, Path(tmp))
        new = kernel_at(kernel, args.new, Path(tmp))
        differ = sum(not same_result(old(*c), new(*c)) for c in calls)  # compiles both, too
        if differ:
            print(f"kernel_ab: {differ} of {len(calls)} calls give different results", file=sys.stderr)
            return 1
        t = timed(old, new, calls, args.passes)
    new_name = args.new or "the working tree"
    print(f"{kernel.function}: {len(calls)} calls of the benchmark's queries, the same results at both")
    for how in ("hot", "cold"):
        before, after = t[f"{how}_old"] * 1e3, t[f"{how}_new"] * 1e3
        print(f"  {how:4s} {args.old} {before:8.1f} ms, {new_name} {after:8.1f} ms: {after / before:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
