"""Waiting for a condition instead of for a time: tests poll what they need, bounded.

A fixed ``sleep(n)`` is either too short on a loaded machine (a flaky test) or
too long everywhere (a slow suite); polling returns as soon as the condition
holds and fails with a message naming it when it never does.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], object], *, timeout: float = 60.0, what: str = "the condition") -> None:
    """Return once ``condition()`` is true; fail after ``timeout`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)  # quick for fast conditions, gentle for slow ones
