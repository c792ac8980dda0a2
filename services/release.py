"""A release: the one artifact that instances and EMR nodes install, built here, named by content.

``build_release(out_dir)`` (``make release``, ``nimbus deploy``) writes
``out_dir/<version>-<digest12>/``:

* ``nimbus_search-<version>-py3-none-any.whl``: this checkout's ``services/`` and
  ``mapreduce/``, with everything they read at run time (migrations, stop words) and the
  customer's ``webui/`` (templates, static files) beside them, as in the checkout;
* ``wheelhouse/``: a wheel of every runtime dependency pinned in ``requirements/runtime.lock``,
  for CPython 3.11 on manylinux_2_28 x86_64 (Amazon Linux 2023, the instances' and EMR 7's
  system), each checked against the lock's hashes as it is downloaded;
* ``requirements.txt``: every wheel above pinned to the sha256 of that very file, the
  project's own last, after the options that keep pip off any package index;
* ``nimbus-bootstrap.sh``: the instances' bootstrap (``infra/bootstrap``);
* ``rds-ca.pem`` (given ``rds_ca``, as ``make release`` does): the CA bundle every process
  verifies the database's TLS certificate with, so that no instance fetches it at boot
  (the bootstrap falls back to AWS's URL without it, which needs a route out);
* ``release.json``: version, digest, target, the install command, every file with its sha256.

A node copies the folder and runs ``INSTALL`` in it: pip refuses a file whose hash differs and
a package the file does not pin, so it installs exactly this release and never asks PyPI.

The same checkout gives the same bytes (``SOURCE_DATE_EPOCH`` pins the wheel's timestamps; the
build backend is pinned in ``pyproject.toml``; the wheel is built from a copy of the files git
knows, never from leftovers in ``build/``), so the same folder name: deploying an unchanged
checkout changes nothing in the stack.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.errors import NimbusError

REPO = Path(__file__).resolve().parents[1]
RUNTIME_LOCK = Path("requirements/runtime.lock")
RDS_CA = "rds-ca.pem"  # the name the bootstrap looks for in the release folder
BOOTSTRAP = Path("infra/bootstrap/nimbus-bootstrap.sh")
# What the wheel is built from: pyproject.toml's packages (and the readme its metadata names).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "services", "mapreduce", "webui")

REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the earliest time a zip entry can hold

# The target: CPython 3.11 on x86_64 Amazon Linux 2023 (glibc 2.34). The lock is resolved for
# manylinux_2_28, so every manylinux tag up to 2_28 fits; pip does not widen --platform itself.
PYTHON_VERSION = "3.11"
PLATFORMS = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)),
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
)
WHEELHOUSE = "wheelhouse"
REQUIREMENTS = "requirements.txt"
MANIFEST = "release.json"
INSTALL = (
    f"python{PYTHON_VERSION} -m pip install --no-index --find-links {WHEELHOUSE} "
    f"--require-hashes -r {REQUIREMENTS}"
)


class ReleaseError(NimbusError):
    """The release could not be built; the message carries pip's own words."""


@dataclass(frozen=True)
class Wheel:
    """The project's wheel alone.

    ``prefix``, ``wheel_key`` and ``bootstrap_key`` are the one-wheel layout that the deploy
    driver and the EMR runner used before the release bundle; they go once both take a
    ``Release``."""

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
        return f"{self.prefix}/{BOOTSTRAP.name}"


@dataclass(frozen=True)
class Release:
    """A built release folder; ``files`` are its paths relative to ``directory``, sorted."""

    directory: Path
    version: str
    digest: str  # sha256 of the manifest's file list (every file but release.json), hex
    files: tuple[str, ...]
    wheel_name: str

    @property
    def prefix(self) -> str:
        """Where the release lies in the artifacts bucket (the template's ``ReleasePrefix``)."""
        return f"releases/{self.directory.name}"

    @property
    def wheel(self) -> Path:
        return self.directory / self.wheel_name

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def objects(self) -> Iterator[tuple[Path, str]]:
        """Every file as (local path, S3 key): what an upload of the release puts where."""
        for name in self.files:
            yield self.directory / name, self.key(name)

    @property
    def wheel_key(self) -> str:
        return self.key(self.wheel_name)

    @property
    def bootstrap_key(self) -> str:
        return self.key(BOOTSTRAP.name)


def build_release(
    out_dir: Path, repo: Path = REPO, wheels_from: Path | None = None, rds_ca: Path | None = None
) -> Release:
    """Build the release of ``repo`` into ``out_dir/<version>-<digest12>/`` (see the module's
    docstring); a folder of that name already there is replaced by the same bytes.

    ``wheels_from``: a folder to take the dependencies' wheels from instead of PyPI (an earlier
    release's wheelhouse, when only the code changed); they are checked against the lock's
    hashes all the same, so the release is the same.

    ``rds_ca``: the database's CA bundle (AWS's ``global-bundle.pem``) to ship as ``rds-ca.pem``;
    refused unless it holds a PEM certificate."""
    if rds_ca is not None and b"-----BEGIN CERTIFICATE-----" not in _read(rds_ca):
        raise ReleaseError(f"{rds_ca} holds no PEM certificate: give AWS's RDS CA bundle (global-bundle.pem)")
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    try:
        wheel = build_wheel(staging, repo)
        wheels = download_wheelhouse(staging / WHEELHOUSE, repo / RUNTIME_LOCK, wheels_from)
        (staging / REQUIREMENTS).write_text(requirements_text(wheel.wheel, wheels))
        shutil.copyfile(repo / BOOTSTRAP, staging / BOOTSTRAP.name)
        if rds_ca is not None:
            shutil.copyfile(rds_ca, staging / RDS_CA)
        files = tuple(sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()))
        hashes = {name: _sha256(staging / name) for name in files}
        digest = manifest_digest(hashes)
        manifest = {
            "name": "nimbus-search",
            "version": wheel.version,
            "digest": digest,
            "python": PYTHON_VERSION,
            "implementation": "cp",
            "platforms": list(PLATFORMS),
            "install": INSTALL,
            "files": {name: {"sha256": hashes[name], "size": _size(staging / name)} for name in files},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        final = out_dir / f"{wheel.version}-{digest[:12]}"
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Release(final, wheel.version, digest, tuple(sorted((*files, MANIFEST))), wheel.wheel.name)


def manifest_digest(hashes: dict[str, str]) -> str:
    """The release's name: sha256 over ``sha256sum``-style lines of its files, sorted by path."""
    lines = "".join(f"{hashes[name]}  {name}\n" for name in sorted(hashes))
    return hashlib.sha256(lines.encode()).hexdigest()


def build_wheel(out_dir: Path, repo: Path = REPO) -> Wheel:
    """The project's wheel (``pip wheel --no-deps``) into ``out_dir``, built from a copy of the
    files git knows under ``WHEEL_SOURCES`` (untracked ones too, ignored ones never)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("nimbus_search-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="nimbus-wheel-") as scratch:
        source = Path(scratch) / "src"
        for name in _source_files(repo):
            target = source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / name, target)
        _pip(["wheel", "--no-deps", "--quiet", "-w", str(out_dir), str(source)], what=f"the wheel of {repo}")
    wheels = sorted(out_dir.glob("nimbus_search-*.whl"))
    if not wheels:
        raise ReleaseError(f"pip wheel {repo} wrote no nimbus_search wheel into {out_dir}")
    return Wheel(wheels[-1], _sha256(wheels[-1]))


def download_wheelhouse(dest: Path, lock: Path, wheels_from: Path | None = None) -> list[Path]:
    """A wheel of every package pinned in ``lock`` into ``dest``, for the target platform, from
    PyPI (or only from the folder ``wheels_from``).

    pip checks each download against the lock's hashes. A package with no wheel for the target
    comes as its source and is built here, which is only safe for pure Python: a compiled one
    built on this machine need not load on Amazon Linux, so it stops the build."""
    dest.mkdir(parents=True, exist_ok=True)
    target = ["--python-version", PYTHON_VERSION, "--implementation", "cp", "--abi", "cp311"]
    for platform in PLATFORMS:
        target += ["--platform", platform]
    if wheels_from is not None:
        target += ["--no-index", "--find-links", str(wheels_from)]
    _pip(
        ["download", "--quiet", "--no-deps", "--require-hashes", "-d", str(dest), *target, "-r", str(lock)],
        what=f"the wheelhouse of {lock}",
    )
    for sdist in sorted(p for p in dest.iterdir() if not p.name.endswith(".whl")):
        with tempfile.TemporaryDirectory(prefix="nimbus-sdist-") as built:
            _pip(["wheel", "--no-deps", "--quiet", "-w", built, str(sdist)], what=f"a wheel of {sdist.name}")
            for wheel in Path(built).glob("*.whl"):
                if not wheel.name.endswith("-none-any.whl"):
                    raise ReleaseError(
                        f"PyPI has no manylinux_2_28 x86_64 wheel of {sdist.name}, and the one built "
                        f"here ({wheel.name}) is compiled for this machine, not Amazon Linux 2023: pin "
                        f"a version that has one in pyproject.toml and run `make lock`"
                    )
                shutil.move(str(wheel), dest / wheel.name)
        sdist.unlink()
    return sorted(dest.glob("*.whl"))


def requirements_text(project: Path, dependencies: Sequence[Path]) -> str:
    """requirements.txt: the options that keep pip off any index (relative find-links are read
    from the file's own folder), then every wheel pinned to its file's sha256, the project last."""
    lines = [
        "# Every package of this release, pinned to the sha256 of the file in this folder. Install with",
        f"#   {INSTALL}",
        "--no-index",
        f"--find-links {WHEELHOUSE}",
        "--find-links .",
    ]
    for wheel in sorted(dependencies, key=lambda p: _name_version(p)[0]):
        name, version = _name_version(wheel)
        lines.append(f"{name}=={version} --hash=sha256:{_sha256(wheel)}")
    name, version = _name_version(project)
    lines.append(f"{name}=={version} --hash=sha256:{_sha256(project)}")
    return "\n".join(lines) + "\n"


def _name_version(wheel: Path) -> tuple[str, str]:
    """The project name (normalized as PyPI does) and version in a wheel's file name."""
    name, version = wheel.name.split("-")[:2]
    return name.lower().replace("_", "-").replace(".", "-"), version


def _source_files(repo: Path) -> list[str]:
    """The wheel's inputs under ``repo``: what git tracks or would track (not what it ignores:
    caches, ``build/``, ``*.egg-info``) and still exists; every file when ``repo`` is no git
    checkout (a source archive)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
             *WHEEL_SOURCES],
            capture_output=True, check=True, text=True,
        ).stdout.split("\0")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        listed = [
            path.relative_to(repo).as_posix()
            for source in WHEEL_SOURCES
            for path in ([repo / source] if (repo / source).is_file() else (repo / source).rglob("*"))
            if "__pycache__" not in path.parts
        ]
    return sorted({name for name in listed if name and (repo / name).is_file()})


def _pip(args: list[str], *, what: str) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH}
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ReleaseError(f"building {what} failed (pip {args[0]}): {done.stderr.strip()[-2000:]}")


def _size(path: Path) -> int:
    return path.stat().st_size


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ReleaseError(f"cannot read {path}: {exc.strerror}") from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m services.release``: build the release and print its folder and files."""
    parser = argparse.ArgumentParser(prog="python -m services.release", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "release", help="parent folder")
    parser.add_argument(
        "--wheels-from",
        type=Path,
        help="take the dependencies from this folder (a release's wheelhouse), not PyPI",
    )
    parser.add_argument(
        "--rds-ca",
        type=Path,
        metavar="PEM",
        help="ship this RDS CA bundle (AWS's global-bundle.pem) as rds-ca.pem: no boot fetches it",
    )
    args = parser.parse_args(argv)
    try:
        release = build_release(args.out, wheels_from=args.wheels_from, rds_ca=args.rds_ca)
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return exc.exit_code
    print(release.directory)
    for path, _key in release.objects():
        print(f"  {path.stat().st_size:>12,}  {path.relative_to(release.directory)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
