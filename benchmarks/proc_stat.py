"""CPU time from Linux's ``/proc/<pid>/stat`` and ``/proc/<pid>/task/<tid>/stat`` lines."""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def command(stat: str) -> str:
    """The process or thread name (between the parentheses: it may itself hold spaces)."""
    return stat[stat.index("(") + 1 : stat.rindex(")")]


def cpu_seconds(stat: str) -> float:
    """User + system CPU seconds so far (fields 14 and 15 of proc(5))."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK
