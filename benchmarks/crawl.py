"""Crawl benchmark: Nimbus against Scrapy and a bare asyncio loop on one synthetic web.

    .venv/bin/python -m benchmarks.crawl [--pages 20000] [--concurrency 32] [--rounds 3]

Starts benchmarks.synthweb in its own process (>= 20,000 pages of real text,
10-30 links each, 4 loopback hosts, robots.txt per host), then crawls it in
the same run with each contender in its own process:

* nimbus: `nimbus crawl` storing content + record blocks (file://) and metadata (SQLite),
  robots obeyed, politeness delay 0, one process;
* nimbus-2p: the same with `--processes 2` (one per core; hosts split by partition,
  the same total concurrency);
* scrapy: robots obeyed, storing nothing, same concurrency;
* bare: asyncio + aiohttp + selectolax, no robots, no storage (the upper limit);
* bare-work: the bare loop doing, with Nimbus's own functions, what every stored page
  needs (parse with text, boilerplate, language and normalized links; hashes; content and
  record blocks in memory), without robots, politeness, spool or database: the floor of
  Nimbus's CPU per page; bare-work/bare is how much of a "<= 2x bare" budget that work
  takes before any crawler machinery;
* nimbus-mariadb, nimbus-2p-mariadb (not in the default set): metadata on the
  local MariaDB (a fresh database per run; NIMBUS_BENCH_MYSQL_URL);
* nimbus-base (with ``--baseline DIR``): `nimbus crawl` of another checkout (an
  older commit: ``git worktree add DIR REV``) run by this venv's Python, so a change's
  cost per page is measured against what it changed in the same run.

Prints pages/s and CPU ms per page (user + system of the crawler process,
from wait4) for each, and the ratios; with ``--rounds N`` every contender runs N times in
turn, and the ratios of each round (one phase of the VM) and their medians are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import make_url

from benchmarks.proc_stat import database_server_cpu

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def run_measured(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[str, float, float]:
    """Run ``cmd`` (in ``cwd``, default the repository); returns (stdout+stderr, wall seconds,
    CPU seconds of the child)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd or ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}):\n{text[-2000:]}")
    return text, wall, usage.ru_utime + usage.ru_stime


MARIADB = os.environ.get("NIMBUS_BENCH_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")
LOCAL_HOSTS = ("127.0.0.1", "localhost", None)  # a server whose CPU /proc shows (committer.py too)


@contextlib.contextmanager
def database(name: str, tmp: str) -> Iterator[str]:
    """SQLite in ``tmp``, or for the ``-mariadb`` contenders a fresh MariaDB database
    (dropped afterwards). The server's CPU is not in the crawler's figure (in production it
    is another machine's, RDS); ``measure`` reports it beside, when the server is local."""
    if not name.endswith("-mariadb"):
        yield f"sqlite:///{tmp}/nimbus.db"
        return
    import sqlalchemy

    db = f"nimbus_bench_{uuid.uuid4().hex[:8]}"
    admin = sqlalchemy.create_engine(MARIADB + "/")
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
    try:
        yield f"{MARIADB}/{db}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {db}")
        admin.dispose()


def main(argv: list[str] | None = None) -> int:
    rounds = measure(argv)
    for number, results in enumerate(rounds, 1):
        if len(rounds) > 1:
            print(f"round {number}:")
        for line in ratio_lines(results):
            print(line)
    if len(rounds) > 1:
        print(f"medians over {len(rounds)} rounds (each ratio taken within its round, one phase of the VM):")
        for ours, peer in _pairs(rounds[0]):
            cpu = sorted(r[ours]["cpu_ms_per_page"] / r[peer]["cpu_ms_per_page"] for r in rounds)
            rate = sorted(r[ours]["pages_per_s"] / r[peer]["pages_per_s"] for r in rounds)
            print(
                f"{ours}/{peer}: {statistics.median(rate):.2f}x pages/s, "
                f"{statistics.median(cpu):.2f}x CPU per page (rounds: {', '.join(f'{c:.2f}' for c in cpu)})"
            )
    return 0


OURS = ("nimbus", "nimbus-2p", "nimbus-mariadb", "nimbus-2p-mariadb")


def _pairs(results: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """(ours, peer) pairs to compare: against the baseline checkout, Scrapy and the bare loop."""
    pairs = [("nimbus", "nimbus-base")] if "nimbus" in results and "nimbus-base" in results else []
    ours = [o for o in (*OURS, "bare-work") if o in results]
    peers = ("scrapy", "bare-work", "bare")
    return pairs + [(o, q) for o in ours for q in peers if q in results and q != o]


def ratio_lines(results: dict[str, dict[str, float]]) -> list[str]:
    """One round's ratios, ours over each peer, as printed."""
    lines = []
    for ours, peer in _pairs(results):
        n, q = results[ours], results[peer]
        server = n["server_cpu_ms_per_page"]
        lines.append(
            f"{ours}/{peer}: {n['pages_per_s'] / q['pages_per_s']:.2f}x pages/s, "
            f"{n['cpu_ms_per_page'] / q['cpu_ms_per_page']:.2f}x CPU per page"
            + (
                f" ({(n['cpu_ms_per_page'] + server) / q['cpu_ms_per_page']:.2f}x with the database server's)"
                if server == server and peer != "nimbus-base"  # not NaN
                else ""
            )
        )
    return lines


def measure(argv: list[str] | None = None) -> list[dict[str, dict[str, float]]]:
    """Crawl the synthetic web with each contender named by ``--only``, ``--rounds`` times
    in turn, printing a line for each crawl; per round, the figures by name (pages,
    seconds, pages_per_s, cpu_ms_per_page, ...).

    Rounds interleave the contenders (A B C, A B C, ...) because this VM's speed drifts
    within minutes (docs/performance-notes.md): a ratio within one round compares one phase,
    and the median of several rounds' ratios is the figure to quote."""
    p = argparse.ArgumentParser(description="crawl benchmark")
    p.add_argument("--pages", type=int, default=20_000, help="pages in the synthetic web")
    p.add_argument("--crawl-pages", type=int, default=None, help="pages each crawler fetches")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--per-host", type=int, default=8, help="Nimbus requests in flight per host")
    p.add_argument("--port", type=int, default=8480)
    p.add_argument("--only", nargs="*", default=["bare", "bare-work", "scrapy", "nimbus", "nimbus-2p"])
    p.add_argument("--baseline", type=Path, help="another checkout, run as nimbus-base (same venv)")
    p.add_argument("--rounds", type=int, default=1, help="run every contender this many times, in turn")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    crawl_pages = args.crawl_pages or args.pages
    if args.baseline and "nimbus-base" not in args.only:
        args.only.append("nimbus-base")

    web = subprocess.Popen(
        [PY, "-m", "benchmarks.synthweb", "--pages", str(args.pages), "--port", str(args.port)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    try:
        seeds = json.loads(web.stdout.readline())["seeds"]
        print(
            f"synthetic web: {args.pages} pages on {len(seeds)} hosts; each crawler fetches "
            f"{crawl_pages} pages at concurrency {args.concurrency}",
            flush=True,
        )
        rounds = []
        for _ in range(args.rounds):
            rounds.append({name: _crawl(name, args, seeds, crawl_pages) for name in args.only})
    finally:
        web.terminate()
        web.wait(timeout=10)
    return rounds


def _crawl(name: str, args: argparse.Namespace, seeds: list[str], crawl_pages: int) -> dict[str, float]:
    """One contender's crawl of the synthetic web, printed and returned."""
    server_cpu = float("nan")  # a local database server's CPU seconds (-mariadb only)
    round_trips = float("nan")  # Nimbus's database round trips per stored page
    if name.startswith("nimbus"):
        processes = 2 if "-2p" in name else 1
        # The baseline checkout's own code: `-m` puts the working directory first on sys.path.
        base = name == "nimbus-base"
        if base and args.baseline is None:
            raise SystemExit("nimbus-base needs --baseline DIR (a checkout of the commit to compare)")
        program = [PY, "-m", "services.cli"] if base else [str(ROOT / ".venv/bin/nimbus")]
        with tempfile.TemporaryDirectory() as tmp, database(name, tmp) as db_url:
            # Politeness delay 0 and 8 requests per host: these are our own loopback hosts.
            env = {
                **os.environ,
                "NIMBUS_DATABASE_URL": db_url,
                "NIMBUS_BLOB_URL": f"file://{tmp}/blobs",
                "NIMBUS_VAR_DIR": tmp,
                "NIMBUS_PER_HOST_CONCURRENCY": str(args.per_host),
            }
            cmd = [
                *program,
                "crawl",
                *seeds,
                "--max-pages",
                str(crawl_pages),
                "--max-depth",
                "100",
                "--delay",
                "0",
                "--concurrency",
                str(args.concurrency),
                "--processes",
                str(processes),
                "--quiet",
            ]
            local = name.endswith("-mariadb") and make_url(MARIADB).host in LOCAL_HOSTS
            server0 = database_server_cpu() if local else None
            text, wall, cpu = run_measured(cmd, env, cwd=args.baseline if base else None)
            server1 = database_server_cpu() if server0 is not None else None
            if server0 is not None and server1 is not None:
                server_cpu = server1 - server0
        m = re.search(r"crawled (\d+) pages in ([\d.]+) s", text)
        if not m:
            raise RuntimeError(f"no summary line from nimbus crawl:\n{text[-2000:]}")
        pages, seconds = int(m.group(1)), float(m.group(2))
        trips = re.search(r"([\d.]+) per stored page", text)
        round_trips = float(trips.group(1)) if trips else float("nan")
    else:
        cmd = [
            PY,
            "-m",
            "benchmarks.peers_crawl",
            name,
            "--max-pages",
            str(crawl_pages),
            "--concurrency",
            str(args.concurrency),
            *seeds,
        ]
        text, wall, cpu = run_measured(cmd)
        data = json.loads(text.strip().splitlines()[-1])
        pages, seconds = int(data["pages"]), float(data["seconds"])
    r = {
        "pages": pages,
        "seconds": seconds,
        "pages_per_s": pages / seconds,
        "cpu_ms_per_page": 1000 * cpu / max(pages, 1),
        "wall": wall,
        "round_trips": round_trips,
        "server_cpu_ms_per_page": 1000 * server_cpu / max(pages, 1),
    }
    print(
        f"{name:9s} {pages:6d} pages in {seconds:7.1f} s = {r['pages_per_s']:7.1f} pages/s, "
        f"{r['cpu_ms_per_page']:6.2f} CPU ms/page (process wall {wall:.1f} s)"
        + (
            f", {r['round_trips']:.2f} database round trips per stored page"
            if name.startswith("nimbus")
            else ""
        )
        + (
            f"; database server {r['server_cpu_ms_per_page']:.2f} CPU ms/page more"
            if r["server_cpu_ms_per_page"] == r["server_cpu_ms_per_page"]  # not NaN
            else ""
        ),
        flush=True,
    )
    return r


if __name__ == "__main__":
    sys.exit(main())
