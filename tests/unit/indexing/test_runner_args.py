"""How jobs are launched: runner switches, the shipped package zip, output files."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import grimp
import pytest
from moto import mock_aws

from services.config import Settings
from services.indexing.runner import (
    JobError,
    absolute_blob_url,
    kernel_cache_lasts,
    package_zip,
    read_rows,
    runner_args,
    store_args,
    write_rows,
)


def test_relative_file_urls_become_absolute_and_s3_urls_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_blob_url("file://var/blobs") == f"file://{tmp_path}/var/blobs"
    assert absolute_blob_url(f"file://{tmp_path}/b") == f"file://{tmp_path}/b"
    assert absolute_blob_url("s3://bucket/prefix") == "s3://bucket/prefix"


def test_store_args_pass_the_endpoint_only_when_set(tmp_path: Path) -> None:
    plain = Settings.of(blob_url=f"file://{tmp_path}")
    assert store_args(plain) == ["--blob-url", f"file://{tmp_path}"]
    moto = Settings.of(blob_url="s3://b/p", aws_endpoint_url="http://127.0.0.1:5000")
    assert store_args(moto) == ["--blob-url", "s3://b/p", "--aws-endpoint-url", "http://127.0.0.1:5000"]


def test_inline_ships_nothing_local_ships_the_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    inline = runner_args(Settings.of(mr_runner="inline"), tmp_path)
    assert inline[:2] == ["-r", "inline"] and "--py-files" not in inline
    local = runner_args(Settings.of(mr_runner="local"), tmp_path / "build-1")
    assert local[:2] == ["-r", "local"]
    assert "--py-files" not in local and "--no-bootstrap-mrjob" in local
    env = [local[i + 1] for i, arg in enumerate(local) if arg == "--cmdenv"]
    # The tasks import the zip where it lies: one path per version of the code, the same in
    # every build (numba's cache of the job's kernel is kept under it).
    (shipped,) = [Path(item.split("=", 1)[1]) for item in env if item.startswith("PYTHONPATH=")]
    assert shipped.is_file() and shipped.parent == tmp_path / "cache" / "nimbus" / "task-packages"
    again = runner_args(Settings.of(mr_runner="local"), tmp_path / "build-2")
    assert f"PYTHONPATH={shipped}" in again
    assert kernel_cache_lasts(Settings.of(mr_runner="local"))
    # A cache folder that cannot be written, or that others may write: a zip of the build's
    # own, shipped as EMR's is, and no compiled numbering (numba could not keep its kernel).
    (tmp_path / "file").write_text("")
    shared_by_all = tmp_path / "shared"
    (shared_by_all / "nimbus" / "task-packages").mkdir(parents=True)
    (shared_by_all / "nimbus").chmod(0o777)
    for cache_home in (tmp_path / "file", shared_by_all):
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
        fallback = runner_args(Settings.of(mr_runner="local"), tmp_path / "build-3")
        assert fallback[fallback.index("--py-files") + 1] == str(tmp_path / "build-3" / "nimbus-packages.zip")
        assert not any(arg.startswith("PYTHONPATH=") for arg in fallback)
        assert not kernel_cache_lasts(Settings.of(mr_runner="local"))
    assert kernel_cache_lasts(Settings.of(mr_runner="inline"))
    assert not kernel_cache_lasts(Settings.of(mr_runner="emr"))
    assert ("SETUPTOOLS_USE_DISTUTILS=stdlib" in env) == (sys.version_info < (3, 12))
    assert any(item.startswith("MALLOC_MMAP_THRESHOLD_=") for item in env)
    assert "--cmdenv" not in inline  # the inline runner's tasks share this process


def test_emr_refuses_a_local_blob_store(tmp_path: Path) -> None:
    with pytest.raises(JobError, match="s3://bucket/prefix"):
        runner_args(Settings.of(mr_runner="emr", blob_url="file://var/blobs"), tmp_path)
    stack = {"emr_service_role": "svc", "emr_instance_profile": "prof", "aws_region": "eu-west-1"}
    with pytest.raises(JobError, match="needs NIMBUS_EMR_SERVICE_ROLE"):
        runner_args(Settings.of(mr_runner="emr", blob_url="s3://b/p"), tmp_path)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "nimbus_search-0.1.0-py3-none-any.whl").write_bytes(b"")  # built once per build
    emr = runner_args(
        Settings.of(mr_runner="emr", blob_url="s3://b/p", emr_subnet="subnet-1", **stack), tmp_path
    )
    assert "--py-files" in emr and "--no-bootstrap-mrjob" not in emr
    assert "SETUPTOOLS_USE_DISTUTILS=stdlib" not in emr  # its interpreter may lack distutils
    opts = dict(zip(emr, emr[1:], strict=False))
    assert opts["--release-label"] == "emr-7.5.0" and opts["--python-bin"] == "python3.11"
    assert (opts["--iam-service-role"], opts["--iam-instance-profile"], opts["--subnet"]) == (
        "svc",
        "prof",
        "subnet-1",
    )
    assert opts["--cloud-tmp-dir"] == "s3://b/emr/tmp/" and opts["--region"] == "eu-west-1"
    assert "--pool-clusters" in emr and "--emr-endpoint" not in emr  # endpoints only for an emulator
    assert any(a.endswith("nimbus_search-0.1.0-py3-none-any.whl#") for a in emr)


def test_package_zip_holds_modules_and_data_files(tmp_path: Path) -> None:
    names = set(zipfile.ZipFile(package_zip(tmp_path / "p.zip")).namelist())
    for needed in (
        "services/__init__.py",
        "services/text/analysis/analyze.py",
        "services/text/analysis/stopwords_en.txt",
        "services/text/analysis/stopwords/german.txt",
        "mapreduce/__init__.py",
        "mapreduce/mr_index.py",
        "services/ranking/pagerank.py",
    ):
        assert needed in names
    assert not any("__pycache__" in name for name in names)
    # Only what tasks run: no crawler, search service or index-build driver.
    assert not any(
        name.startswith(("services/crawler/", "services/search/", "services/indexing/")) for name in names
    )


def test_package_zip_holds_every_module_the_jobs_import(tmp_path: Path) -> None:
    """The import closure of ``mapreduce`` (grimp, import-linter's graph) is in the zip, so a
    task can never fail with "No module named ..." for a module of this project.

    The graph is built in this process: pytest (importlib mode) puts no test folder on
    sys.path, so ``mapreduce`` is the project's package, never tests/unit/mapreduce."""
    graph = grimp.build_graph("mapreduce", "services", cache_dir=None)
    needed = set(graph.find_upstream_modules("mapreduce", as_package=True))
    needed |= {m for m in graph.modules if m.startswith("mapreduce")}
    assert "mapreduce.mr_index" in needed and "services.text.analysis.analyze" in needed
    names = set(zipfile.ZipFile(package_zip(tmp_path / "p.zip")).namelist())
    for module in needed:
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, module


def test_rows_round_trip_through_the_job_format(tmp_path: Path) -> None:
    rows = [(["term", "tab\there"], [[0, 1]]), (3, [0.1 + 0.2, [1, 2]]), ("é", None)]
    assert write_rows(tmp_path / "out", iter(rows)) == 3
    assert list(read_rows(tmp_path / "out")) == rows
    assert (tmp_path / "out").read_text().count("\n") == 3


EMR_STACK = {
    "mr_runner": "emr",
    "blob_url": "s3://b/p",
    "emr_service_role": "svc",
    "emr_instance_profile": "prof",
    "aws_region": "us-east-1",
}


@pytest.fixture
def release_bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A release bundle's files in a moto bucket (the fake credentials moto wants)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="artifacts")
        s3.put_object(
            Bucket="artifacts", Key="releases/0.1.0-abc/requirements.txt", Body=b"x==1 --hash=sha256:0"
        )
        yield s3


def test_with_a_release_the_nodes_install_it_from_s3_and_never_pypi(tmp_path: Path, release_bucket) -> None:
    settings = Settings.of(**EMR_STACK, release_url="s3://artifacts/releases/0.1.0-abc")
    emr = runner_args(settings, tmp_path)
    bootstrap = [emr[i + 1] for i, arg in enumerate(emr) if arg == "--bootstrap"]
    assert bootstrap == [
        "sudo dnf install -y -q python3.11 python3.11-pip",
        "aws s3 cp --recursive --only-show-errors --region us-east-1 "
        "s3://artifacts/releases/0.1.0-abc/ /tmp/nimbus-release/",
        "cd /tmp/nimbus-release && sudo python3.11 -m pip install --quiet --disable-pip-version-check "
        "--no-index --find-links /tmp/nimbus-release/wheelhouse --require-hashes "
        "-r /tmp/nimbus-release/requirements.txt",
    ]
    # Tasks import the installed release (mrjob too): no zip from this machine, no wheel built.
    assert "--py-files" not in emr and "--no-bootstrap-mrjob" in emr
    assert not (tmp_path / "dist").exists()
    missing = settings.with_overrides(release_url="s3://artifacts/releases/0.2.0-def/")
    with pytest.raises(JobError, match=r"no release bundle at s3://artifacts/releases/0.2.0-def/"):
        runner_args(missing, tmp_path)
    with pytest.raises(JobError, match="NIMBUS_RELEASE_URL='/srv/release'"):
        runner_args(settings.with_overrides(release_url="/srv/release"), tmp_path)


def test_the_stacks_emr_security_groups_go_to_run_job_flow(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "nimbus_search-0.1.0-py3-none-any.whl").write_bytes(b"")
    groups = {"emr_master_sg": "sg-m", "emr_slave_sg": "sg-s", "emr_service_sg": "sg-a"}
    emr = runner_args(Settings.of(**EMR_STACK, **groups), tmp_path)
    params = [emr[i + 1] for i, arg in enumerate(emr) if arg == "--extra-cluster-param"]
    assert params == [
        "Instances.EmrManagedMasterSecurityGroup=sg-m",
        "Instances.EmrManagedSlaveSecurityGroup=sg-s",
        "Instances.ServiceAccessSecurityGroup=sg-a",
    ]
    assert "--extra-cluster-param" not in runner_args(Settings.of(**EMR_STACK), tmp_path)
    with pytest.raises(JobError, match="NIMBUS_EMR_MASTER_SG and NIMBUS_EMR_SLAVE_SG together"):
        runner_args(Settings.of(**EMR_STACK, emr_master_sg="sg-m"), tmp_path)


def test_shared_zip_is_written_once_per_version_and_long_unused_ones_pruned(tmp_path: Path) -> None:
    import os
    import time

    from services.indexing.runner import STALE_PACKAGE_SECONDS, shared_package_zip

    now = time.time()
    for name, unused in [("stale", STALE_PACKAGE_SECONDS + 60), ("recent", STALE_PACKAGE_SECONDS - 60)]:
        other = tmp_path / f"nimbus-packages-{name}.zip"  # other versions' zips
        other.write_bytes(b"old")
        os.utime(other, (now - unused, now - unused))
    zip_path = shared_package_zip(tmp_path)
    assert "services/text/analysis/rough_ids.py" in zipfile.ZipFile(zip_path).namelist()
    kept = sorted(p.name for p in tmp_path.glob("nimbus-packages-*.zip"))
    assert kept == sorted([zip_path.name, "nimbus-packages-recent.zip"])  # a build may still run it
    # Used again: the same file, not rewritten, marked used now (never stale while in use).
    os.utime(zip_path, (now - STALE_PACKAGE_SECONDS - 60,) * 2)
    content = zip_path.read_bytes()
    assert shared_package_zip(tmp_path) == zip_path and zip_path.read_bytes() == content
    assert now - zip_path.stat().st_mtime < 60
    assert not list(tmp_path.glob(".*partial"))
