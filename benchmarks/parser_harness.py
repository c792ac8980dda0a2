"""The parser benchmark's harness (``benchmarks.parsers`` runs it): what a contender extracts,
how a section of contenders is timed (CPU time, turns taken, median repetition), and the
sanity columns that say the contenders extracted the same thing."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.tables import figure, format_table, jaccard, ratio, words

INSTALL = "pip install -e '.[bench]'"

Clock = Callable[[], float]


@dataclass(frozen=True)
class Extract:
    """What a text extractor found in one document."""

    text: str
    links: int = 0


@dataclass(frozen=True)
class Archive:
    """What a WARC reader found in one file: records, and the response payloads' bytes and digest."""

    records: int
    payload_bytes: int
    digest: str


@dataclass
class Contender:
    name: str
    extract: Callable[[Any], Any] | None  # one input to its result; None: the library is missing
    missing: str = ""  # how to install it, when extract is None


@dataclass
class Section:
    title: str
    unit: str  # what the throughput counts ("pages")
    inputs: list[Any]
    units: int  # units in one pass over the inputs
    input_bytes: int
    contenders: list[Contender]
    nimbus: str  # the contender whose figure the first ratio column divides
    library: str = ""  # the library Nimbus uses, alone on the peers' task (second ratio column)
    notes: list[str] = field(default_factory=list)  # printed under the table


def measure(
    extracts: dict[str, Callable[[Any], Any]],
    inputs: Sequence[Any],
    reps: int,
    min_seconds: float,
    clock: Clock = time.process_time,
) -> dict[str, tuple[float, list[Any]]]:
    """Each contender's passes over ``inputs`` per CPU second (the median of ``reps``
    repetitions) and its outputs, by name.

    A warm-up pass first (imports, caches, lazy tables), whose outputs are returned. The
    repetitions take turns, one of each contender in each round, so a drift of the machine's
    speed during the run (this VM's two vCPUs differ: docs/performance-notes.md) falls on all of them
    alike. Each repetition runs whole passes until ``min_seconds`` of CPU time have gone, so
    a fast contender is not timed on one pass of a few milliseconds."""
    outputs = {name: [extract(item) for item in inputs] for name, extract in extracts.items()}
    rates: dict[str, list[float]] = {name: [] for name in extracts}
    for _ in range(reps):
        for name, extract in extracts.items():
            gc.collect()
            passes, started = 0, clock()
            while True:
                for item in inputs:
                    extract(item)
                passes += 1
                elapsed = clock() - started
                if elapsed >= min_seconds:
                    break
            rates[name].append(passes / elapsed if elapsed > 0 else float("inf"))
    return {name: (statistics.median(rates[name]), outputs[name]) for name in extracts}


def text_columns(outputs: list[Extract], base: list[Extract]) -> dict[str, str]:
    """Running words, links (when the reference finds any) and the mean per-document word-set
    Jaccard against ``base``, the reference's outputs for the same documents."""
    scores = [jaccard(set(words(o.text)), set(words(b.text))) for o, b in zip(outputs, base, strict=True)]
    columns = {"words": f"{sum(len(words(o.text)) for o in outputs):,}"}
    if any(b.links for b in base):
        columns["links"] = f"{sum(o.links for o in outputs):,}"
    columns["Jaccard"] = f"{statistics.fmean(scores):.3f}"
    return columns


def archive_columns(outputs: list[Archive], base: list[Archive]) -> dict[str, str]:
    """Records, response payload bytes, and whether the payloads are byte for byte ``base``'s."""
    same = [o.digest for o in outputs] == [b.digest for b in base]
    return {
        "records": f"{sum(o.records for o in outputs):,}",
        "payload bytes": f"{sum(o.payload_bytes for o in outputs):,}",
        "same payloads": "yes" if same else "NO",
    }


def run_section(section: Section, reps: int, min_seconds: float) -> list[str]:
    """The section's table, then a line for each library not installed and the notes."""
    plural = "s" if len(section.inputs) != 1 else ""
    lines = [
        f"{section.title}: {len(section.inputs)} input{plural}, {section.units:,} {section.unit}, "
        f"{section.input_bytes / 1e6:.2f} MB a pass",
        "",
    ]
    missing = [
        f"{c.name}: not installed ({c.missing}); no figures" for c in section.contenders if c.extract is None
    ]
    extracts = {c.name: c.extract for c in section.contenders if c.extract is not None}
    results = measure(extracts, section.inputs, reps, min_seconds)
    references = [name for name in (section.nimbus, section.library) if name]
    base = results[references[-1]][1]  # sanity against the library Nimbus uses
    headers = ["contender", f"{section.unit}/s", "MB/s", *(f"{name} ÷ it" for name in references)]
    rows = []
    for name, (passes, outputs) in results.items():
        row = [name, figure(passes * section.units), figure(passes * section.input_bytes / 1e6)]
        row += [ratio(results[reference][0], passes) for reference in references]
        sanity = (archive_columns if isinstance(outputs[0], Archive) else text_columns)(outputs, base)
        if len(rows) == 0:
            headers += list(sanity)
        rows.append(row + list(sanity.values()))
    lines += format_table(headers, rows)
    if missing or section.notes:
        lines += ["", *missing, *section.notes]
    return lines


def missing_library(name: str, package: str) -> Contender:
    """A contender whose library is not installed: skipped, with how to install it."""
    return Contender(name, None, f"{INSTALL}, or pip install {package}")
