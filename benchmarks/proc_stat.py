"""CPU time from Linux's ``/proc/<pid>/stat`` and ``/proc/<pid>/task/<tid>/stat`` lines."""

from __future__ import annotations

import os
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def command(stat: str) -> str:
    """The process or thread name (between the parentheses: it may itself hold spaces)."""
    return stat[stat.index("(") + 1 : stat.rindex(")")]


def cpu_seconds(stat: str) -> float:
    """User + system CPU seconds so far (fields 14 and 15 of proc(5))."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def database_server_cpu() -> float | None:
    """CPU seconds so far of a MariaDB/MySQL server running on this machine (None: none here).

    A benchmark against a local server reads it before and after: the server's share of the
    work is then reported beside the client's instead of vanishing from the figures."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if command(text) in ("mariadbd", "mysqld"):
            return cpu_seconds(text)
    return None
