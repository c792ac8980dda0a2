"""Query latency of two checkouts on their published indexes, interleaved (A, B, A, B, ...).

    .venv/bin/python -m benchmarks.latency_ab --a CHECKOUT:STATE --b CHECKOUT:STATE [--rounds 3]

Each STATE is a ``benchmarks.index`` Nimbus state (``var/bench/nimbus-state``: the database
and blob store of a published index over the same corpus); each CHECKOUT the code that
built it and answers with it. Every round runs each side in a fresh process of its own,
with that checkout's code first on the path, timing the corpus's queries through
``SearchService.ranked`` as ``benchmarks.index`` does: as typed (AND, the default), with
``OR`` between the words (as written, no feedback, since stop 49: an older checkout's
four-word ones run RM3 feedback), and quoted
(a phrase: the positions). Interleaving spreads this shared machine's drift over both
sides; the figures are each side's median over the rounds of its p50 and p95.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.index import load_queries
from benchmarks.passes import RESULT, timed_queries

ROOT = Path(__file__).resolve().parents[1]


def side(state: Path, corpus: Path) -> dict[str, float]:
    """One side's figures, in this process (the checkout's code is what imports here)."""
    from services.config import Settings
    from services.eval.run import state_settings
    from services.search.service import SearchService

    queries = load_queries(corpus)
    settings = state_settings(Settings.from_env({}), state)
    service = SearchService(settings)
    try:
        typed = timed_queries(lambda q: service.ranked(q, 10), queries)
        ored = timed_queries(lambda q: service.ranked(" OR ".join(q.split()), 10), queries)
        quoted = timed_queries(lambda q: service.ranked(f'"{q}"', 10), queries)
    finally:
        service.close()
    return {
        **typed,
        **{f"or_{k}": v for k, v in ored.items()},
        **{f"phrase_{k}": v for k, v in quoted.items()},
    }


def run_side(checkout: Path, state: Path, corpus: Path) -> dict[str, float]:
    # This file run as a script, so that the other checkout needs no copy of it: its own
    # ``services`` and ``benchmarks.index`` come first on the path.
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    args = [sys.executable, str(Path(__file__).resolve()), "--side", str(state), "--corpus", str(corpus)]
    proc = subprocess.run(args, env=env, cwd=checkout, stdout=subprocess.PIPE, text=True, check=True)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            figures: dict[str, float] = json.loads(line[len(RESULT) :])
            return figures
    raise SystemExit(f"latency_ab: no result from {checkout}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="query latency of two checkouts, interleaved")
    p.add_argument("--a", help="CHECKOUT:STATE of side A")
    p.add_argument("--b", help="CHECKOUT:STATE of side B")
    p.add_argument("--corpus", type=Path, default=ROOT / "var" / "bench" / "corpus-100000")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--side", type=Path, help=argparse.SUPPRESS)  # internal: one side, here
    args = p.parse_args(argv)
    if args.side:
        print(RESULT + json.dumps(side(args.side, args.corpus)), flush=True)
        return 0
    sides = {"A": args.a, "B": args.b}
    got: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for name, spec in sides.items():
            checkout, _, state = spec.partition(":")
            figures = run_side(Path(checkout), Path(state), args.corpus)
            got[name].append(figures)
            print(f"round {r + 1} {name}: {_line(figures)}", flush=True)
    for name, spec in sides.items():
        med = {k: statistics.median(f[k] for f in got[name]) for k in got[name][0]}
        print(f"{name} ({spec}) median of {args.rounds}: {_line(med)}")
    return 0


def _line(f: dict[str, float]) -> str:
    return "; ".join(
        f"{label} p50 {f[prefix + 'p50']:.2f} p95 {f[prefix + 'p95']:.2f} ms"
        for label, prefix in (("as typed", ""), ("OR", "or_"), ("phrase", "phrase_"))
    )


if __name__ == "__main__":
    sys.exit(main())
