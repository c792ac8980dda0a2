"""Archive crawls against a bare loop over the same records (issue 30).

    .venv/bin/python -m benchmarks.archives [--mb 100] [--rounds 1] [--only warc wiki] [--quick]

The sample WARC and MediaWiki dump are enlarged to at least ``--mb`` MB each
(``benchmarks.big_archives``: distinct pages, one gzip member per WARC record, a
single-stream bz2 dump), then for each, in the same run, each contender in a process of
its own:

* **bare**: the bare loop. ``plan_batches`` then ``read_batch`` over every batch (the
  readers the crawl uses), every 2xx HTML or PDF payload parsed by the crawler's
  ``parse_document`` (wiki pages come out of the reader extracted already); nothing
  stored, no database.
* **crawl**: ``nimbus archive crawl`` into a fresh MariaDB database and ``file://`` blobs,
  registration included: records stored end to end as documents, content and record
  blocks, links and aliases.
* **cluster 1w / 2w** (unless ``--no-cluster``): ``nimbus archive register``, then
  ``nimbus crawl committer`` and one or two ``nimbus crawl worker``s on a fresh MariaDB
  database and ``file://`` blobs, until the bundle is finished.

Records/s is wall time; CPU per record is user + system time of every Nimbus process
involved (``os.wait4``), and beside it the local MariaDB server's (``/proc``), which on a
shared server includes other clients' queries. On a machine of two cores, wall time cannot
show two workers scaling; CPU per record is the quantity that must stay flat from one
worker to two. With ``--rounds N`` the contenders take turns N times and the medians of
the ratios taken within a round are printed. ``--quick``: 1 MB archives and the test
settings' short flush and heartbeat intervals (a smoke test, not a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.big_archives import MB, enlarged_warc, enlarged_wiki
from benchmarks.crawl import ROOT, database
from benchmarks.proc_stat import database_server_cpu

PY = sys.executable
ARCHIVES = {"warc": enlarged_warc, "wiki": enlarged_wiki}
QUICK_ENV = {"NIMBUS_HEARTBEAT_SECONDS": "0.5", "NIMBUS_FLUSH_INTERVAL": "0.3"}


@dataclass
class Run:
    """One contender's run over one archive."""

    records: int
    kept: int  # pages and documents parsed (bare) or stored (crawl)
    wall: float
    cpu: float  # Nimbus's processes
    server: float | None  # the local mariadbd's, when there is one
    plan_cpu: float = 0.0  # bare: of ``cpu``, plan_batches's (the crawl's registration pass)

    @property
    def rate(self) -> float:
        return self.records / self.wall

    def cpu_ms(self, server: bool = False) -> float:
        extra = (self.server or 0.0) if server else 0.0
        return 1000 * (self.cpu + extra) / self.records


def bare_loop(folder: str) -> dict[str, float]:
    """Read and extract every record of the bundle in ``folder``; its counts as JSON."""
    from services.archives.batches import plan_batches, read_batch
    from services.archives.bundle import load_bundle
    from services.crawler.web.fetch_result import FetchResult
    from services.crawler.web.parse import INDEXABLE, classify, parse_document

    bundle = load_bundle(folder)
    started = time.process_time()
    batches = plan_batches(bundle)
    planned = time.process_time() - started
    records = kept = 0
    now = time.time()
    for batch in batches:
        for record in read_batch(bundle, batch, fetched_at=now):
            records += 1
            payload = record.payload
            if payload is not None and 200 <= payload.status < 300:
                if classify(payload.content_type, payload.body) in INDEXABLE:
                    fetched = FetchResult(
                        record.url, record.url, payload.status, payload.content_type, payload.body
                    )
                    parse_document(fetched, record.url)
                    kept += 1
            elif record.document is not None and record.document.text.strip():
                kept += 1
    return {"records": records, "kept": kept, "plan_cpu": planned}


class Measured:
    """Child processes started and reaped with their CPU time (``os.wait4``)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log, self.cpu = env, log, 0.0
        self.server0 = database_server_cpu()

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as err:
            return subprocess.Popen([PY, *args], env=self.env, cwd=ROOT, stdout=err, stderr=err)

    def reap(self, proc: subprocess.Popen[bytes]) -> int:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu += usage.ru_utime + usage.ru_stime
        return proc.returncode

    def run(self, *args: str) -> None:
        if self.reap(self.start(*args)) != 0:
            raise RuntimeError(f"{' '.join(args[:4])} failed:\n{self.log.read_text()[-3000:]}")

    def server(self) -> float | None:
        now = database_server_cpu()
        return None if now is None or self.server0 is None else now - self.server0


def _env(database_url: str, tmp: Path, quick: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    env.update(
        NIMBUS_DATABASE_URL=database_url,
        NIMBUS_BLOB_URL=f"file://{tmp / 'blobs'}",
        NIMBUS_VAR_DIR=str(tmp / "var"),
        PYTHONPATH=str(ROOT),
    )
    return env | (QUICK_ENV if quick else {})


def _stored(database_url: str) -> tuple[int, int, str]:
    """Records read by the committed batches, documents stored, and the bundle's state."""
    from sqlalchemy import func, select

    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.models import ArchiveBatch, ArchiveBundle, Document

    engine = make_engine(database_url)
    try:
        with session_factory(engine)() as s:
            records = s.scalar(select(func.sum(ArchiveBatch.records))) or 0
            documents = s.scalar(select(func.count()).select_from(Document)) or 0
            state = s.scalar(select(ArchiveBundle.state)) or ""
            return int(records), int(documents), state
    finally:
        engine.dispose()


@contextlib.contextmanager
def _store() -> Iterator[tuple[str, Path]]:
    """A fresh MariaDB database and a temporary folder (blobs, var, the processes' log)."""
    with tempfile.TemporaryDirectory(prefix="nimbus-bench-") as tmp, database("x-mariadb", tmp) as url:
        yield url, Path(tmp)


def run_bare(folder: Path) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "out"
        measured = Measured({**os.environ, "PYTHONPATH": str(ROOT)}, log)
        started = time.perf_counter()
        measured.run("-m", "benchmarks.archives", "--bare-loop", str(folder))
        wall = time.perf_counter() - started
        counts = json.loads(log.read_text().strip().splitlines()[-1])
    return Run(int(counts["records"]), int(counts["kept"]), wall, measured.cpu, None, counts["plan_cpu"])


def run_crawl(folder: Path, quick: bool) -> Run:
    with _store() as (url, tmp):
        measured = Measured(_env(url, tmp, quick), tmp / "log")
        started = time.perf_counter()
        measured.run("-m", "services.cli", "archive", "crawl", str(folder), "--quiet")
        wall = time.perf_counter() - started
        server = measured.server()
        records, documents, state = _stored(url)
    if state != "finished":
        raise RuntimeError(f"nimbus archive crawl left the bundle {state!r}")
    return Run(records, documents, wall, measured.cpu, server)


def run_cluster(folder: Path, workers: int, quick: bool) -> Run:
    """``nimbus archive register``, a committer and ``workers`` workers until the bundle is
    finished; the committer is then stopped (SIGTERM), as an operator would."""
    with _store() as (url, tmp):
        measured = Measured(_env(url, tmp, quick), tmp / "log")
        started = time.perf_counter()
        measured.run("-m", "services.cli", "archive", "register", str(folder))
        committer = measured.start("-m", "services.cli", "crawl", "committer")
        crew = [
            measured.start("-m", "services.cli", "crawl", "worker", "--quiet", "--id", f"bench/w{i}")
            for i in range(workers)
        ]
        try:
            for worker in crew:  # a worker ends once no archive batch is left or out
                if measured.reap(worker) != 0:
                    raise RuntimeError(f"a worker failed:\n{measured.log.read_text()[-3000:]}")
            while _stored(url)[2] != "finished":
                if committer.poll() is not None:
                    raise RuntimeError(f"the committer ended:\n{measured.log.read_text()[-3000:]}")
                time.sleep(0.2)
            wall = time.perf_counter() - started
        finally:
            for proc in [committer, *crew]:
                if proc.returncode is None:
                    proc.terminate()
                    measured.reap(proc)
        server = measured.server()
        records, documents, _state = _stored(url)
    return Run(records, documents, wall, measured.cpu, server)


def measure(folder: Path, rounds: int, cluster: bool, quick: bool) -> list[dict[str, Run]]:
    """Each round: bare, crawl, and the clusters of one and two workers, in turn."""
    results = []
    for _ in range(rounds):
        runs = {"bare": run_bare(folder), "crawl": run_crawl(folder, quick)}
        if cluster:
            runs["1w"] = run_cluster(folder, 1, quick)
            runs["2w"] = run_cluster(folder, 2, quick)
        results.append(runs)
    return results


def _ms(run: Run) -> str:
    if run.server is None:
        return f"{run.cpu_ms():.2f}"
    return f"{run.cpu_ms():.2f} + {1000 * run.server / run.records:.2f} db = {run.cpu_ms(server=True):.2f}"


def report(name: str, folder: Path, rounds: list[dict[str, Run]]) -> list[str]:
    """The archive's table (Markdown: docs/benchmarks.md takes it as it is) and the goals."""
    size = sum(p.stat().st_size for p in folder.iterdir() if p.name != "bundle.toml")
    lines = [
        f"{name}: {folder.name} ({size / MB:.1f} MB)",
        "",
        "| round | contender | records | kept | wall s | records/s | CPU ms/record (nimbus + mariadbd) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for number, runs in enumerate(rounds, 1):
        for label, run in runs.items():
            lines.append(
                f"| {number} | {label} | {run.records:,} | {run.kept:,} | {run.wall:.1f} | "
                f"{run.rate:,.0f} | {_ms(run)} |"
            )
    speed = [r["crawl"].rate / r["bare"].rate for r in rounds]
    work = [r["bare"].cpu_ms() / r["crawl"].cpu_ms(server=True) for r in rounds]
    plan = [r["bare"].plan_cpu / r["bare"].cpu for r in rounds]
    lines += [
        "",
        f"bare loop's CPU in plan_batches (the registration pass, the crawl's too): "
        f"{statistics.median(plan):.0%}",
        f"crawl/bare records/s: {_median(speed)} (goal >= 0.7)",
        f"crawl/bare records per CPU second (mariadbd's counted): {_median(work)}",
    ]
    if "2w" in rounds[0]:
        cpu = [r["2w"].cpu_ms() / r["1w"].cpu_ms() for r in rounds]
        total = [r["2w"].cpu_ms(server=True) / r["1w"].cpu_ms(server=True) for r in rounds]
        lines.append(
            f"CPU/record 2 workers / 1 worker: {_median(cpu)} nimbus, {_median(total)} with mariadbd "
            "(goal ~1.0)"
        )
    lines.append("")
    return lines


def _median(values: list[float]) -> str:
    shown = f"{statistics.median(values):.2f}x"
    return shown if len(values) == 1 else f"{shown} (rounds: {', '.join(f'{v:.2f}' for v in values)})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="archive crawls against a bare read-and-extract loop")
    p.add_argument("--mb", type=float, default=100.0, help="each archive at least this many MB")
    p.add_argument("--rounds", type=int, default=1, help="turns of every contender (medians printed)")
    p.add_argument("--only", nargs="+", choices=sorted(ARCHIVES), default=sorted(ARCHIVES))
    p.add_argument("--no-cluster", dest="cluster", action="store_false", help="skip the worker runs")
    p.add_argument("--quick", action="store_true", help="1 MB archives, short intervals: a smoke test")
    p.add_argument("--cache", type=Path, help="where the enlarged archives are kept (var/bench-archives)")
    p.add_argument("--bare-loop", metavar="FOLDER", help=argparse.SUPPRESS)  # the bare contender's process
    args = p.parse_args(argv)
    if args.bare_loop:
        print(json.dumps(bare_loop(args.bare_loop)))
        return 0
    size = int((1.0 if args.quick else args.mb) * MB)
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} CPUs")
    for name in args.only:
        make = ARCHIVES[name]
        folder = make(size, args.cache) if args.cache else make(size)
        for line in report(name, folder, measure(folder, args.rounds, args.cluster, args.quick)):
            print(line, flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
