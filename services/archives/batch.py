"""What a batch of an archive bundle is: a byte range of one file and what a worker needs to
seek straight to it (``seek_state``, per format: ``batches``' table). Planned once at
registration (``batches.plan_batches``), stored in the ledger and read back by any worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TO_END = 2**62  # the end of the last batch of a file: fits a signed 64-bit column


@dataclass(frozen=True)
class Batch:
    file: str  # relative to the bundle; "" for sql
    start: int
    end: int
    records_hint: int
    seek_state: dict[str, Any] = field(default_factory=dict)  # JSON-serializable
