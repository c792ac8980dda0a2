"""Where a crawled page's CPU goes, by thread: the event loop, the commit thread, the lease thread.

    .venv/bin/python -m benchmarks.crawl_threads [--pages 10000]

Starts benchmarks.synthweb, then runs one Nimbus crawl *in this process* (SQLite and
file:// blobs in a temporary directory, politeness delay 0, 8 requests per host, as
benchmarks.crawl does) while a sampler reads every thread's user + system time from
``/proc/self/task/<tid>/stat`` (Linux). Prints CPU ms per crawled page for each thread
by name, and the whole process's.

benchmarks.crawl gives one number per crawler; this one says which part of Nimbus to
look at. A profiler's shares inflate Python code and ignore time outside the GIL;
thread CPU is what the kernel charged, C libraries (SQLite, zlib, lexbor) included.
Pair it with ``py-spy record --threads`` for the functions inside one thread, or pass
``--parts`` to time the main parts of a page's path (``PARTS``) with ``time.thread_time``:
a wrapper's own cost is small next to the parts it times, and nothing else is changed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from benchmarks.proc_stat import cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_SECONDS = 0.2  # a thread's last reading before it exits is what counts


class ThreadCpu:
    """The latest CPU seconds of every thread this process has run, by thread name."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[str, float]] = {}  # tid -> (name, seconds)
        self._before: dict[str, float] = {}
        self._switches: dict[str, int] = {}  # tid -> context switches (voluntary + not)
        self._switches_before: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def __enter__(self) -> ThreadCpu:
        self.sample()
        self._before = {tid: seconds for tid, (_name, seconds) in self._last.items()}  # imports etc.
        self._switches_before = dict(self._switches)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        names = {str(t.native_id): t.name for t in threading.enumerate()}
        for tid in os.listdir("/proc/self/task"):
            try:
                stat = Path(f"/proc/self/task/{tid}/stat").read_text()
                status = Path(f"/proc/self/task/{tid}/status").read_text()
            except OSError:  # the thread ended between listdir and read
                continue
            self._switches[tid] = sum(  # voluntary_ctxt_switches + nonvoluntary_ctxt_switches
                int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line
            )
            seconds = cpu_seconds(stat)
            name = names.get(tid) or self._last.get(tid, (f"thread {tid}", 0.0))[0]
            self._last[tid] = (name, seconds)

    def by_name(self) -> Counter[str]:
        """Seconds per thread name, numbered pool threads folded (``nimbus-commit_0`` ->
        ``nimbus-commit``)."""
        totals: Counter[str] = Counter()
        for tid, (name, seconds) in self._last.items():
            totals[_pool_name(name)] += seconds - self._before.get(tid, 0.0)
        return totals

    def switches_by_name(self) -> Counter[str]:
        """Context switches per thread name (as ``by_name``): a thread that waits for the GIL
        or for I/O is switched out; each switch costs CPU that no function's time shows."""
        totals: Counter[str] = Counter()
        for tid, (name, _seconds) in self._last.items():
            totals[_pool_name(name)] += self._switches.get(tid, 0) - self._switches_before.get(tid, 0)
        return totals


def _pool_name(name: str) -> str:
    """A pool thread's name without its number: ``nimbus-commit_0`` -> ``nimbus-commit``."""
    return name.rsplit("_", 1)[0] if name[-1:].isdigit() else name


# With --parts: functions timed with time.thread_time (their thread's CPU, not wall time)
# while they run, as (module, attribute path, label). Each is a part of a page's path:
# the event loop's parse and spool, the commit thread's blocks, rows and frontier.
PARTS = [
    ("services.crawler.visit", "parse_document", "event loop: parse_document (CLD2 included)"),
    ("services.crawler.commit.spool", "Spool.append", "event loop: write-ahead spool"),
    ("services.crawler.commit.committer", "Committer._commit_once", "commit thread: a whole flush"),
    ("services.storage.documents", "DocumentWriter.write", "commit thread: content + record blocks"),
    ("services.storage.formats.records", "RecordBlockWriter.add", "commit thread: record JSON + gzip"),
    ("services.crawler.commit.committer", "Committer._record_frontier", "commit thread: frontier"),
    # The frontier's module as the committer names it (``entries``): wrapped there, the seeds'
    # add_urls (crawl.py, once, a few URLs) counts too.
    ("services.crawler.commit.committer", "entries.add_urls", "commit thread: frontier upserts"),
    ("services.crawler.commit.committer", "entries.finish", "commit thread: finishing fetched rows"),
]


class PartTimer:
    """CPU seconds spent inside each of ``PARTS``, by the thread that ran it (wraps them)."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self._undo: list[tuple[object, str, object]] = []

    def __enter__(self) -> PartTimer:
        import importlib

        found = []  # every part looked up before any is wrapped: a renamed one stops the run here
        for module_name, path, label in PARTS:
            owner: object = importlib.import_module(module_name)
            *parents, name = path.split(".")
            try:
                for parent in parents:
                    owner = getattr(owner, parent)
                original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            except (AttributeError, KeyError):
                raise SystemExit(f"--parts: {module_name} has no {path} any more; update PARTS") from None
            found.append((owner, name, original, label))
        for owner, name, original, label in found:
            self._undo.append((owner, name, original))
            setattr(owner, name, self._timed(original, label))
        return self

    def _timed(self, original: object, label: str) -> object:
        func = original.__func__ if isinstance(original, staticmethod) else original
        seconds = self.seconds

        def timed(*args: object, **kwargs: object) -> object:
            started = time.thread_time()
            try:
                return func(*args, **kwargs)  # type: ignore[operator]
            finally:
                seconds[label] += time.thread_time() - started

        return staticmethod(timed) if isinstance(original, staticmethod) else timed

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="crawl CPU per page, by thread")
    p.add_argument("--pages", type=int, default=10_000)
    p.add_argument("--port", type=int, default=8485)
    p.add_argument("--parts", action="store_true", help="also time the parts of a page's path (PARTS)")
    args = p.parse_args(argv)
    if not Path("/proc/self/task").is_dir():
        raise SystemExit("crawl_threads reads /proc/self/task: Linux only")
    web = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.synthweb", "--pages", str(args.pages), "--port", str(args.port)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    try:
        assert web.stdout is not None
        seeds = json.loads(web.stdout.readline())["seeds"]
        with tempfile.TemporaryDirectory() as tmp:
            from services.config import Settings
            from services.crawler.crawl import run_crawl

            settings = Settings.from_env(
                {
                    **os.environ,
                    "NIMBUS_DATABASE_URL": f"sqlite:///{tmp}/nimbus.db",
                    "NIMBUS_BLOB_URL": f"file://{tmp}/blobs",
                    "NIMBUS_VAR_DIR": tmp,
                    "NIMBUS_PER_HOST_CONCURRENCY": "8",
                }
            ).with_overrides(crawl_delay=0.0, concurrency=32)
            parts = PartTimer()
            cpu0 = time.process_time()
            with ThreadCpu() as threads, parts if args.parts else contextlib.nullcontext():
                stats = run_crawl(settings, seeds, max_pages=args.pages, max_depth=100, progress=False)
            cpu = time.process_time() - cpu0
    finally:
        web.terminate()
        web.wait(timeout=10)
    pages = max(stats.pages, 1)
    print(stats.summary())
    print(f"{'thread':24s} CPU ms/page  context switches/page")
    switches = threads.switches_by_name()
    for name, seconds in threads.by_name().most_common():
        if name != "bench-sampler" and seconds > 0:
            print(f"{name:24s} {1000 * seconds / pages:7.3f}      {switches[name] / pages:7.2f}")
    print(f"{'whole process':24s} {1000 * cpu / pages:7.3f}")
    if args.parts:
        print("part (CPU of the thread that ran it; nested parts are inside their parent's)")
        for _module, _path, label in PARTS:
            print(f"  {label:48s} {1000 * parts.seconds[label] / pages:7.3f} ms/page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
