"""glibc allocator settings: applied at run time, or passed to new processes."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from services.malloc import MMAP_THRESHOLD_MAX, malloc_env

ROOT = Path(__file__).resolve().parents[2]

# Ten 500 KB arrays made and freed, as a query's tables and candidate arrays are: prints the
# page faults of 20 such rounds after a first one.
ROUNDS = """
import resource, sys
import numpy as np
from services.malloc import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory() is True
def round_():
    arrays = [np.ones(125_000, dtype=np.float32) for _ in range(10)]
    del arrays
round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    round_()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_env_form_names_glibcs_variables():
    env = malloc_env(trim_threshold=1 << 30, top_pad=1 << 20)
    assert env == {
        "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_MAX),
        "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
        "MALLOC_TOP_PAD_": str(1 << 20),
    }


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_arrays_are_reused_without_page_faults():
    """glibc's defaults hand the freed arrays back to the kernel and fault them in again
    next round (~1,200 faults a round); after ``keep_freed_memory`` they are reused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def faults(mode: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", ROUNDS, mode],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout)

    assert faults("default") > 10_000
    assert faults("keep") < 500


# A worker thread fills its own arena with small blocks (below the mmap threshold) and frees
# them; prints the process's resident MB before and after ``give_back_freed_memory``.
THREAD_ARENA = """
import threading
from services.malloc import give_back_freed_memory
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
def work():
    blocks = [bytearray(64 << 10) for _ in range(3000)]  # ~190 MB of 64 KB blocks, touched
    del blocks[1:]  # all but the first: the arena's low end stays in use, so it cannot shrink
    held.append(blocks)
held = []
thread = threading.Thread(target=work)
thread.start()
thread.join()
before = rss()
assert give_back_freed_memory() is True
print(before, rss())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_threads_freed_memory_is_given_back():
    """What a worker thread freed stays in its arena, counted as the process's, until
    ``give_back_freed_memory`` (the build calls it after its packing thread's work)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", THREAD_ARENA], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    before, after = map(int, out.stdout.split())
    assert before - after > 100, (before, after)
