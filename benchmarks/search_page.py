"""Whole-page search speed: `/api/search`, `/` and `/api/suggest` over HTTP, one client and
64 concurrent connections, on the 100,000-document benchmark index.

    .venv/bin/python -m benchmarks.search_page [--docs 100000] [--workers 2] [--seconds 20]

Prepares (once; kept under var/bench/search-<docs>) the corpus of ``benchmarks.textcorpus``,
ingested as record blocks and indexed by ``nimbus index``; then starts ``nimbus serve
--workers N`` (rate limit off) and measures, from outside the server, as a browser or an
API client would see it:

Twice: with the result cache off (every answer computed: the figure for a query not asked
before) and on (the default; after the warm-up pass every answer is a cache hit, as a
repeated query is).

* one client (``http.client``), keep-alive, every query once after a warm-up pass: p50/p95/p99 in ms of
  ``/api/search?q=`` and ``/?q=`` (HTML), and of ``/api/suggest?q=`` for a prefix of each
  query's first word (HTTP included: an upper bound of the server-side time); beside it the
  search's own p50 as the server reports it (``took_ms``), and the CPU each worker last ran
  on (this VM's two vCPUs run the same search at different speeds: docs/benchmarks.md);
* load: locust, headless, 64 users on FastHttpUser with no wait (64 connections, closed
  loop) for ``--seconds``: requests/s, failures, p50/p95/p99. Locust runs on the same two
  cores as the server, so its own CPU is taken from the server's.

No peer is named for this figure: the goals are absolute (p50 <= 3 ms and p95
<= 10 ms for one client, >= 500 requests/s with 0 errors under load, suggest p95 <= 5 ms).
"""

from __future__ import annotations

import argparse
import csv
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx

from benchmarks.textcorpus import DATA, build

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def prepare(docs: int, state: Path) -> dict[str, str]:
    """The benchmark index (built when missing); returns the environment that serves it."""
    from services.config import Settings
    from services.eval.run import state_settings

    settings = state_settings(Settings.from_env({}), state / "nimbus").with_overrides(mr_runner="inline")
    env = {
        **os.environ,
        "NIMBUS_DATABASE_URL": settings.database_url,
        "NIMBUS_BLOB_URL": settings.blob_url,
        "NIMBUS_VAR_DIR": str(settings.var_dir),
        "NIMBUS_RATE_LIMIT": "off",
    }
    from services.storage.formats.segment import SEGMENT_FORMAT
    from services.text.analysis.analyze import analyzer_version

    # The stamp says which index the prepared state holds: a release that reads another
    # segment format or analyzes otherwise rebuilds the index (the crawl is kept).
    stamp = f"format {SEGMENT_FORMAT}, analyzer {analyzer_version()}\n"
    ready = state / "ready"
    if ready.exists():
        if ready.read_text() != stamp:
            subprocess.run([sys.executable, "-m", "services.cli", "index"], env=env, check=True, cwd=ROOT)
            ready.write_text(stamp)
        return env
    from services.eval.crawl import crawl_jsonl

    shutil.rmtree(state, ignore_errors=True)
    (state / "nimbus").mkdir(parents=True)
    corpus = state / "corpus"
    build(DATA, docs, 500, corpus)
    # Stored as `nimbus eval` stores a collection: an archive crawl of its JSON lines.
    stored = crawl_jsonl(corpus / "docs.jsonl", "bench", settings, state / "nimbus", {}, progress=False)
    print(f"archive crawl: {stored.seconds:.1f} s", flush=True)
    subprocess.run([sys.executable, "-m", "services.cli", "index"], env=env, check=True, cwd=ROOT)
    ready.write_text(stamp)
    return env


def queries_of(state: Path) -> list[str]:
    with (state / "corpus" / "queries.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(env: dict[str, str], workers: int, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [str(ROOT / ".venv/bin/nimbus"), "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).json().get("status") == "ok":
                return proc
        except (httpx.HTTPError, ValueError):
            pass  # not answering yet (or not yet JSON): ask again below
        if proc.poll() is not None:
            raise RuntimeError("nimbus serve exited before it answered /healthz")
        time.sleep(0.2)  # a benchmark polling a server start, not a test
    proc.kill()
    raise RuntimeError("nimbus serve did not answer /healthz within 120 s")


def one_client(base: str, queries: list[str]) -> dict[str, dict[str, float]]:
    """One keep-alive connection through the standard library's ``http.client``: a light client,
    as a browser or curl is; httpx, in Python, adds time of its own to every request
    (docs/benchmarks.md)."""
    prefixes = [q.split()[0][: max(2, len(q.split()[0]) // 2)] for q in queries]
    paths = {
        "/api/search": [f"/api/search?{urlencode({'q': q})}" for q in queries],
        "/ (HTML)": [f"/?{urlencode({'q': q})}" for q in queries],
        "/api/suggest": [f"/api/suggest?{urlencode({'q': p})}" for p in prefixes],
    }
    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=30)

    def get(target: str) -> bytes:
        connection.request("GET", target)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {target} answered {response.status}: {body[:200]!r}")
        return body

    out = {}
    try:
        for name, targets in paths.items():
            for target in targets:  # warm-up: caches, page faults, lazily built tables
                get(target)
            times, inside = [], []
            for target in targets:
                start = time.perf_counter()
                body = get(target)
                times.append((time.perf_counter() - start) * 1000)
                if name == "/api/search":
                    inside.append(float(json.loads(body)["took_ms"]))
            out[name] = {
                "p50": statistics.median(times),
                "p95": percentile(times, 0.95),
                "p99": percentile(times, 0.99),
            }
            if inside:  # the search's own time, as the server measured it (HTTP excluded)
                out[name]["search p50"] = statistics.median(inside)
    finally:
        connection.close()
    return out


def worker_cpus(supervisor: int) -> dict[int, int]:
    """pid -> the CPU each worker of ``supervisor`` last ran on (/proc/<pid>/stat, field 39):
    on a VM whose vCPUs differ in speed the one-client figures depend on it."""
    cpus = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(fields[1]) != supervisor:  # fields[1] is the parent pid (field 4 of stat)
            continue
        try:
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in command:  # a worker, not multiprocessing's resource tracker
            cpus[int(stat.parent.name)] = int(fields[36])
    return cpus


LOCUSTFILE = """
import random
from locust import constant
from locust import task
from locust.contrib.fasthttp import FastHttpUser

QUERIES = {queries!r}


class Searcher(FastHttpUser):
    wait_time = constant(0)

    @task
    def search(self):
        self.client.get("/api/search", params={{"q": random.choice(QUERIES)}}, name="/api/search")
"""


def load(base: str, queries: list[str], seconds: int, users: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        locustfile = Path(tmp) / "locustfile.py"
        locustfile.write_text(LOCUSTFILE.format(queries=queries))
        prefix = Path(tmp) / "run"
        subprocess.run(
            [
                str(ROOT / ".venv/bin/locust"),
                "-f",
                str(locustfile),
                "--headless",
                "-u",
                str(users),
                "-r",
                str(users),
                "-t",
                f"{seconds}s",
                "--host",
                base,
                "--csv",
                str(prefix),
                "--only-summary",
                "--loglevel",
                "ERROR",
            ],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(f"{prefix}_stats.csv", encoding="utf-8") as fh:
            row = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    return {
        "requests": float(row["Request Count"]),
        "failures": float(row["Failure Count"]),
        "rps": float(row["Requests/s"]),
        "p50": float(row["50%"]),
        "p95": float(row["95%"]),
        "p99": float(row["99%"]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="whole-page search speed")
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    p.add_argument("--seconds", type=int, default=20, help="length of the load run")
    p.add_argument("--users", type=int, default=64, help="concurrent connections of the load run")
    p.add_argument("--prepare-only", action="store_true")
    args = p.parse_args(argv)
    # A SIGTERM (timeout, pkill) ends the run through the ``finally`` that stops the server,
    # not around it: a killed run used to leave its ``nimbus serve`` running.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    state = ROOT / "var" / "bench" / f"search-{args.docs}"
    env = prepare(args.docs, state)
    if args.prepare_only:
        return 0
    queries = queries_of(state)
    random.Random(7).shuffle(queries)
    for label, cache in (("cache off (every answer computed)", "0"), ("cache on (the default)", "")):
        port = free_port()
        proc = serve({**env, "NIMBUS_RESULT_CACHE_SIZE": cache}, args.workers, port)
        base = f"http://127.0.0.1:{port}"
        print(
            f"-- {label}, {args.workers} workers, {args.docs} documents, {len(queries)} queries", flush=True
        )
        try:
            single = one_client(base, queries)
            for name, figures in single.items():
                inside = ""
                if "search p50" in figures:
                    inside = f"  (search itself p50 {figures['search p50']:.2f} ms)"
                print(
                    f"one client {name:13s} p50 {figures['p50']:6.2f} ms  p95 {figures['p95']:6.2f} ms  "
                    f"p99 {figures['p99']:6.2f} ms{inside}",
                    flush=True,
                )
            cpus = ", ".join(f"pid {pid} on CPU {cpu}" for pid, cpu in sorted(worker_cpus(proc.pid).items()))
            print(f"workers after the one-client run: {cpus or 'unknown'}", flush=True)
            loaded = load(base, queries, args.seconds, args.users)
            print(
                f"load: {args.users} connections, {args.seconds} s: {loaded['rps']:.0f} requests/s, "
                f"{loaded['failures']:.0f} failures of {loaded['requests']:.0f}, "
                f"p50 {loaded['p50']:.0f} ms  p95 {loaded['p95']:.0f} ms  p99 {loaded['p99']:.0f} ms",
                flush=True,
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
