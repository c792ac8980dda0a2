"""What a release folder holds, and that the same checkout builds it again byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from services.release import (
    BOOTSTRAP,
    MANIFEST,
    RDS_CA,
    REQUIREMENTS,
    WHEELHOUSE,
    Release,
    ReleaseError,
    build_release,
)
from tests.integration.release.conftest import REPO
from tests.integration.release.rehearsal.tls import RehearsalCA

PIN = re.compile(r"^([a-z0-9][a-z0-9._-]*)==([^\s\\;]+)", re.MULTILINE)


def _pins(text: str) -> dict[str, str]:
    return {name: version for name, version in PIN.findall(text)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_build_of_the_same_checkout_is_the_same_bytes(
    release: Release, test_ca: RehearsalCA, tmp_path: Path
) -> None:
    """The wheel, requirements.txt and release.json again; the dependencies are taken from the
    first build's wheelhouse rather than downloaded twice (pip checks them against the lock's
    hashes either way, so a download gives the same files)."""
    again = build_release(tmp_path, wheels_from=release.directory / WHEELHOUSE, rds_ca=test_ca.certificate)
    assert (again.prefix, again.digest, again.files) == (release.prefix, release.digest, release.files)
    for name in release.files:
        assert (again.directory / name).read_bytes() == (release.directory / name).read_bytes(), name
    shutil.rmtree(again.directory)  # 150 MB


def test_the_folder_is_named_by_its_content_and_release_json_lists_every_file(
    release: Release, test_ca: RehearsalCA
) -> None:
    manifest = json.loads((release.directory / MANIFEST).read_text())
    assert release.prefix == f"releases/{release.version}-{release.digest[:12]}"
    assert manifest["version"] == release.version and manifest["digest"] == release.digest
    assert sorted(manifest["files"]) == [name for name in release.files if name != MANIFEST]
    for name, entry in manifest["files"].items():
        assert _sha256(release.directory / name) == entry["sha256"], name
    # The digest is the sha256sum listing of the files: a changed byte anywhere renames the release.
    listing = "".join(f"{manifest['files'][n]['sha256']}  {n}\n" for n in sorted(manifest["files"]))
    assert hashlib.sha256(listing.encode()).hexdigest() == release.digest
    assert (release.directory / BOOTSTRAP.name).read_bytes() == (REPO / BOOTSTRAP).read_bytes()
    assert (release.directory / RDS_CA).read_bytes() == test_ca.certificate.read_bytes()
    keys = dict((key, path) for path, key in release.objects())
    assert set(keys) == {f"{release.prefix}/{name}" for name in release.files}


def test_requirements_pin_each_file_of_the_folder_and_keep_pip_off_any_index(release: Release) -> None:
    text = (release.directory / REQUIREMENTS).read_text()
    options = [line for line in text.splitlines() if line.startswith("--")]
    assert options == ["--no-index", f"--find-links {WHEELHOUSE}", "--find-links ."]
    hashes = dict(re.findall(r"^(\S+)==\S+ --hash=sha256:([0-9a-f]{64})$", text, re.MULTILINE))
    wheels = sorted((release.directory / WHEELHOUSE).iterdir())
    assert all(w.suffix == ".whl" for w in wheels) and len(hashes) == len(wheels) + 1
    assert sorted(hashes.values()) == sorted(_sha256(w) for w in [*wheels, release.wheel])
    assert text.splitlines()[-1].startswith(f"nimbus-search=={release.version} ")
    for wheel in wheels:  # CPython 3.11 on manylinux <= 2_28 x86_64, or pure
        tags = wheel.name.removesuffix(".whl").split("-")[-3:]
        assert tags[2] == "any" or "x86_64" in tags[2], wheel.name
        assert tags[0] in {"py3", "py2.py3", "cp311"} or tags[1] == "abi3", wheel.name


def test_the_runtime_lock_is_the_tested_lock_without_the_test_extras() -> None:
    """Production runs the versions CI tests: every runtime pin is the test lock's pin, and the
    runtime lock carries no test tool."""
    runtime = _pins((REPO / "requirements/runtime.lock").read_text())
    tested = _pins((REPO / "requirements/lock.txt").read_text())
    assert runtime and {name: tested.get(name) for name in runtime} == runtime
    assert not {"pytest", "moto", "ruff", "mypy", "playwright"} & set(runtime)
    assert {"fastapi", "uvicorn", "httpx", "sqlalchemy", "boto3", "mrjob"} <= set(runtime)
    # And every dependency pyproject.toml declares: one added without `make lock` would make
    # every boot fail at pip ("no matching distribution"), which only a boot would show.
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", dep)[0]).lower() for dep in declared}  # type: ignore[index]
    assert names - set(runtime) == set(), "run `make lock`: requirements/runtime.lock misses them"


def test_the_wheel_carries_every_file_the_services_read(release: Release) -> None:
    """Every file git knows under the packages and webui/ is in the wheel, at its checkout path:
    templates, static files, migrations, stop words."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "services",
         "mapreduce", "webui"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    expected = {name for name in listed if (REPO / name).is_file()}
    with zipfile.ZipFile(release.wheel) as wheel:
        inside = {name for name in wheel.namelist() if ".dist-info/" not in name}
        assert inside == expected
        assert wheel.read("webui/static/style.css") == (REPO / "webui/static/style.css").read_bytes()
        assert {info.date_time for info in wheel.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_a_ca_bundle_without_a_certificate_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    """An HTML error page saved as the bundle (a proxy's, say) would stop every boot at step 3."""
    page = tmp_path / "global-bundle.pem"
    page.write_text("<html>Access denied</html>")
    with pytest.raises(ReleaseError, match="global-bundle.pem holds no PEM certificate"):
        build_release(tmp_path / "out", rds_ca=page)
    assert not (tmp_path / "out").exists()
