"""The sample data in ``data/`` is what its README and SHA256SUMS say it is.

The demo, the evaluation and many tests read these files; a silent edit would
change their results without a trace, so every file is checked by hash and
none may appear without a line in SHA256SUMS.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
NOT_SAMPLES = {"README.md", "SHA256SUMS"}


def _listed() -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.removeprefix("./")] = digest
    return sums


def test_every_listed_file_has_its_checksum() -> None:
    listed = _listed()
    assert len(listed) >= 14
    for name, digest in listed.items():
        path = DATA / name
        assert path.is_file(), f"data/{name} is listed in SHA256SUMS but missing"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"data/{name} changed"


def test_every_sample_file_is_listed_and_described() -> None:
    listed = set(_listed())
    present = {
        p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name not in NOT_SAMPLES
    }
    assert present == listed, f"unlisted: {sorted(present - listed)}; missing: {sorted(listed - present)}"
    readme = (DATA / "README.md").read_text()
    for name in listed:
        assert Path(name).name in readme, f"data/README.md says nothing of {name}"
