"""The release bundle a deployment runs: one folder per release, uploaded under its own prefix.

The layout is the release's (``services.release``, docs/deploy.md): a folder named
``<version>-<digest12>`` holding the wheel, ``wheelhouse/``, the hash-pinned
``requirements.txt``, ``nimbus-bootstrap.sh`` and ``release.json``. Its name is its
content, so the S3 prefix ``releases/<name>/`` names one release for ever: the
template's ``ReleasePrefix``, and ``NIMBUS_RELEASE_URL`` on every instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from services.deploy.errors import DeployError

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
    """The release of this checkout, built into ``dist`` by the release's own builder
    (``services.release.build_release``: the wheel, a wheelhouse of the runtime lock,
    hash-pinned requirements)."""
    from services.release import build_release

    return ReleaseBundle(build_release(dist).directory)


def existing_bundle(directory: Path) -> ReleaseBundle:
    """A release already built (``make release``, a CI job's artifact): the artifact that was
    tested is the one deployed, byte for byte."""
    bundle = ReleaseBundle(directory)
    bundle.files()  # refuses a folder that is not a release, naming it
    return bundle
