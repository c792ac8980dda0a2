"""The base of this project's mrjob jobs: task output through a 1 MB buffer.

mrjob writes each output row to the task's stdout with two ``write`` calls,
and in a task process stdout is unbuffered (``sys.stdout.buffer`` is the raw
file): two system calls per row, a large share of an index reducer's time
(docs/performance-notes.md).
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from mrjob.job import MRJob


class BufferedOutputJob(MRJob):
    _stdout: BinaryIO | None

    def execute(self) -> None:
        # The inline runner (and tests) hand the job a stdout of their own: left alone.
        if self._stdout is not None or not (
            self.options.run_mapper or self.options.run_reducer or self.options.run_combiner
        ):
            super().execute()
            return
        with open(sys.stdout.fileno(), "wb", buffering=1 << 20, closefd=False) as out:
            self._stdout = out  # closing flushes; closefd=False leaves fd 1 open
            try:
                super().execute()
            finally:
                self._stdout = None
