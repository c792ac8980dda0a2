"""The release bundle a deployment runs: one folder per release, uploaded under its own prefix.

The layout is the release's (``services.release``, docs/deploy.md): a folder named
``<version>-<digest12>`` holding the wheel, ``wheelhouse/``, the hash-pinned
``requirements.txt``, ``nimbus-bootstrap.sh`` and ``release.json``. Its name is its
content, so the S3 prefix ``releases/<name>/`` names one release for ever: the
template's ``ReleasePrefix``, and ``NIMBUS_RELEASE_URL`` on every instance.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from services.deploy.errors import DeployError
from services.deploy.template import BOOTSTRAP

MANIFEST = "release.json"  # uploaded last: its presence in S3 says the upload is complete


@dataclass(frozen=True)
class ReleaseBundle:
    directory: Path

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def prefix(self) -> str:
        """``releases/<version>-<digest12>``: the template's ReleasePrefix."""
        return f"releases/{self.name}"

    def files(self) -> list[str]:
        """Every file of the bundle, relative to it, the manifest last."""
        found = sorted(
            p.relative_to(self.directory).as_posix() for p in self.directory.rglob("*") if p.is_file()
        )
        if MANIFEST not in found or "nimbus-bootstrap.sh" not in found:
            raise DeployError(
                f"{self.directory} is not a release bundle (no {MANIFEST} or nimbus-bootstrap.sh): "
                "build it with `make release`"
            )
        found.remove(MANIFEST)
        return [*found, MANIFEST]


def build_bundle(dist: Path) -> ReleaseBundle:
    """The release of this checkout, built into ``dist``.

    Through ``services.release.build_release`` (the release's own builder) where it
    exists; until then through the minimal adapter below.
    """
    from services import release

    builder = getattr(release, "build_release", None)
    if builder is None:
        return _adapter_bundle(dist)
    built = builder(dist)
    directory = Path(getattr(built, "directory", built))
    return ReleaseBundle(directory)


def _adapter_bundle(dist: Path) -> ReleaseBundle:
    """MINIMAL ADAPTER, to be removed when ``services.release.build_release`` lands: the
    bundle's layout around the wheel alone. It vendors no dependency (``wheelhouse/`` is
    empty and ``requirements.txt`` names only the wheel), so an instance booted from it
    fails at the bootstrap's install step; it serves the deploy driver and its tests."""
    from services.release import build_wheel

    wheel_release = build_wheel(dist / "wheel")
    version = wheel_release.version
    bootstrap_sha = hashlib.sha256(BOOTSTRAP.read_bytes()).hexdigest()
    requirements = f"nimbus-search=={version} --hash=sha256:{wheel_release.digest}\n"
    files = {
        wheel_release.wheel.name: wheel_release.digest,
        "nimbus-bootstrap.sh": bootstrap_sha,
        "requirements.txt": hashlib.sha256(requirements.encode()).hexdigest(),
    }
    # Named by everything in it: a changed bootstrap is a new release too.
    digest = hashlib.sha256("".join(f"{n} {h}\n" for n, h in sorted(files.items())).encode()).hexdigest()
    directory = dist / "release" / f"{version}-{digest[:12]}"
    if directory.exists():
        shutil.rmtree(directory)
    (directory / "wheelhouse").mkdir(parents=True)
    shutil.copy2(wheel_release.wheel, directory / wheel_release.wheel.name)
    shutil.copy2(BOOTSTRAP, directory / "nimbus-bootstrap.sh")
    (directory / "requirements.txt").write_text(requirements)
    manifest = {"version": version, "digest": digest, "files": files, "adapter": True}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return ReleaseBundle(directory)
