"""A release folder in the bundle's layout around the project wheel alone, for tests of the
deploy driver: it uploads, names and points the stack at a release, whatever the release
holds. Its wheelhouse is empty, so an instance booted from it would fail at the install step;
the real bundle and its install are tested in tests/integration/release/."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from services.deploy.bundle import MANIFEST, ReleaseBundle
from services.deploy.template import BOOTSTRAP
from services.release import build_wheel


def fake_release(dist: Path) -> ReleaseBundle:
    wheel = build_wheel(dist / "wheel")
    requirements = f"nimbus-search=={wheel.version} --hash=sha256:{wheel.digest}\n"
    files = {
        wheel.wheel.name: wheel.digest,
        "nimbus-bootstrap.sh": hashlib.sha256(BOOTSTRAP.read_bytes()).hexdigest(),
        "requirements.txt": hashlib.sha256(requirements.encode()).hexdigest(),
    }
    digest = hashlib.sha256("".join(f"{n} {h}\n" for n, h in sorted(files.items())).encode()).hexdigest()
    directory = dist / "release" / f"{wheel.version}-{digest[:12]}"
    (directory / "wheelhouse").mkdir(parents=True)
    shutil.copy2(wheel.wheel, directory / wheel.wheel.name)
    shutil.copy2(BOOTSTRAP, directory / "nimbus-bootstrap.sh")
    (directory / "requirements.txt").write_text(requirements)
    manifest = {"version": wheel.version, "digest": digest, "files": files, "fake": True}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return ReleaseBundle(directory)
