"""A release: one wheel of this checkout, built reproducibly, named by content.

Deployments install it on instances; EMR index builds install it on the
cluster's nodes, so tasks run exactly this code with its dependencies.

``SOURCE_DATE_EPOCH`` pins the timestamps inside the wheel, so the same code
gives the same bytes and the same release key: deploying an unchanged
checkout changes nothing in the stack.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from services.errors import NimbusError

REPO = Path(__file__).resolve().parents[1]


class ReleaseError(NimbusError):
    """The wheel could not be built; the message carries pip's own words."""


REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the earliest time a zip entry can hold


@dataclass(frozen=True)
class Release:
    wheel: Path
    digest: str  # sha256 of the wheel, hex

    @property
    def version(self) -> str:
        return self.wheel.name.split("-")[1]

    @property
    def prefix(self) -> str:
        return f"releases/{self.version}-{self.digest[:12]}"

    @property
    def wheel_key(self) -> str:
        return f"{self.prefix}/{self.wheel.name}"

    @property
    def bootstrap_key(self) -> str:
        return f"{self.prefix}/nimbus-bootstrap.sh"


def build_wheel(out_dir: Path, repo: Path = REPO) -> Release:
    """``pip wheel --no-deps`` of the checkout into ``out_dir`` (its dependencies come from
    the package index on the instance, pinned by the wheel's own metadata)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("nimbus_search-*.whl"):
        old.unlink()
    env = {**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out_dir), str(repo)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = sorted(out_dir.glob("nimbus_search-*.whl"))
    if done.returncode != 0 or not wheels:
        raise ReleaseError(f"building the wheel failed (pip wheel {repo}): {done.stderr.strip()[-2000:]}")
    wheel = wheels[-1]
    return Release(wheel, hashlib.sha256(wheel.read_bytes()).hexdigest())
