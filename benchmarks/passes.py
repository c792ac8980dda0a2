"""Timed query passes, as the latency benchmarks take them: each query timed alone, its figure
the fastest of ``TIMED_PASSES`` passes (the first pass's kept apart), per workload; and the
protocol by which contenders built in processes of their own take their passes in turns
(``interleaved``, ``serve_passes``), so that a slower minute of the machine falls on all
of them alike (docs/benchmarks.md, stop 44)."""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from services.malloc import give_back_freed_memory

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# Timed passes over the queries: a query's figure is the fastest of its passes (timeit's
# convention: the least disturbed by the rest of the machine, on this shared 2-core one the
# same code's single-pass p95 differed by 2x run to run, docs/benchmarks.md). The first pass's
# figures are kept as well (``*_one_pass``).
TIMED_PASSES = 5


# A contender's timed work: per figure prefix ("" for its default, "or_", "and_", ...), what
# runs one query and the queries it runs.
Workloads = dict[str, tuple[Callable[[str], object], list[str]]]


def warm_up(workloads: Workloads) -> None:
    """Every query of every workload once (memory maps, lazy structures), then no garbage left
    by the build for the collector to walk during the timed passes, as in a serving process."""
    for run, queries in workloads.values():
        for q in queries:
            run(q)
    gc.collect()


def one_pass(workloads: Workloads) -> dict[str, list[float]]:
    """Each workload's queries once, each timed alone (milliseconds, in query order)."""
    times: dict[str, list[float]] = {}
    for prefix, (run, queries) in workloads.items():
        took = times[prefix] = []
        for q in queries:
            start = time.perf_counter()
            run(q)
            took.append((time.perf_counter() - start) * 1000.0)
    return times


def summarize(passes: list[dict[str, list[float]]]) -> dict[str, float]:
    """``timed_queries``'s figures from passes of ``one_pass``: each query's fastest, and the
    first pass's alone, per workload prefix."""
    out: dict[str, float] = {}
    for prefix in passes[0]:
        best = [min(p[prefix][i] for p in passes) for i in range(len(passes[0][prefix]))]
        first = passes[0][prefix]
        out[f"{prefix}p50"] = percentile(best, 0.5)
        out[f"{prefix}p95"] = percentile(best, 0.95)
        out[f"{prefix}mean"] = statistics.fmean(best)
        out[f"{prefix}p50_one_pass"] = percentile(first, 0.5)
        out[f"{prefix}p95_one_pass"] = percentile(first, 0.95)
    return out


def timed_queries(
    run: Callable[[str], object], queries: list[str], passes: int = TIMED_PASSES
) -> dict[str, float]:
    """One workload's figures in this process: warmed up, then ``passes`` timed passes."""
    workloads: Workloads = {"": (run, queries)}
    warm_up(workloads)
    return summarize([one_pass(workloads) for _ in range(passes)])


RESULT = "RESULT "  # the line a contender's process reports its build figures on
READY = "READY"  # ... says it warmed up and waits for passes
TIMES = "TIMES "  # ... reports one pass's times on


def serve_passes(figures: dict[str, float], workloads: Workloads, close: Callable[[], None]) -> None:
    """A contender's process after its build: its figures, then warm, then one timed pass of its
    workloads per "pass" line on stdin, until stdin ends."""
    print(RESULT + json.dumps(figures), flush=True)
    try:
        gc.collect()
        give_back_freed_memory()  # what the build held (a corpus), not kept while others build
        warm_up(workloads)
        print(READY, flush=True)
        for line in sys.stdin:
            if line.strip() != "pass":
                break
            print(TIMES + json.dumps(one_pass(workloads)), flush=True)
    finally:
        close()


def interleaved(
    module: str, names: list[str], extra: list[str], passes: int = TIMED_PASSES
) -> dict[str, dict[str, float]]:
    """Each contender (``python -m MODULE --contender NAME EXTRA...``, which ends in
    ``serve_passes``) built in a process of its own, one after another (no build shares the
    machine with another's work); then, with every contender warmed up and idle, the timed
    passes taken in turns, the order rotated each pass (A B C, B C A, C A B, ...): a minute
    the machine is slower falls on every contender's passes alike, not on one contender's
    whole query phase, which on this shared machine moved a ratio by half (docs/benchmarks.md,
    stop 44). A query's figure is its fastest pass, as ``timed_queries``'s. The idle
    contenders stay resident while the later ones build (each gives its freed heap back to
    the system first: at a million documents tantivy's corpus was 10 GB)."""
    names = list(dict.fromkeys(names))  # one process a contender: a second would share its state
    procs: dict[str, subprocess.Popen[str]] = {}
    results: dict[str, dict[str, float]] = {}

    def answer(name: str, wanted: str) -> str:
        """The contender's next line starting with ``wanted``; its other lines (a library's
        warnings, its own progress) printed as they come."""
        stdout = procs[name].stdout
        assert stdout is not None
        for line in stdout:
            if line.startswith(wanted):
                return line
            print(line, end="", flush=True)
        code = procs[name].wait()
        raise SystemExit(
            f"benchmarks.index: {name}'s process ended (exit {code}) before its {wanted.strip()}"
        )

    failed = False
    try:
        for name in names:
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", module, "--contender", name, *extra],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            # Its build, then its warm-up: nothing else runs meanwhile.
            results[name] = json.loads(answer(name, RESULT)[len(RESULT) :])
            answer(name, READY)
        runs: dict[str, list[dict[str, list[float]]]] = {name: [] for name in names}
        for n in range(passes):
            for name in names[n % len(names) :] + names[: n % len(names)]:
                stdin = procs[name].stdin
                assert stdin is not None
                stdin.write("pass\n")
                stdin.flush()
                runs[name].append(json.loads(answer(name, TIMES)[len(TIMES) :]))
        for name in names:
            results[name].update(summarize(runs[name]))
    except BaseException:
        failed = True
        raise
    finally:
        for name, proc in procs.items():
            if proc.stdin is not None:
                proc.stdin.close()
            if failed:
                proc.kill()  # it may be blocked writing a line nobody reads any more
            try:
                code = proc.wait(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0 and not failed:
                raise SystemExit(f"benchmarks.index: {name}'s process exited {code} after its passes")
    return results
