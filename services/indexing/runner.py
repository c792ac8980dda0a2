"""Run an mrjob job with the configured runner and keep its output in a local file.

The same call runs a job in-process (``inline``), in subprocesses on this
machine (``local``) or on EMR (``emr``); only ``settings.index.mr_runner`` differs.
Subprocess and cluster tasks import this project from a zip (without it they fail with
``No module named 'services'``): on EMR shipped with ``--py-files``, on this machine named
by the tasks' ``PYTHONPATH`` where it lies (``shared_package_zip``):
``mapreduce/`` and the ground-floor packages it imports (``TASK_PACKAGES``),
nothing of the crawler, the search service or this driver. Third-party packages (numpy, PyStemmer,
boto3) must already be installed where tasks run: on EMR by the cluster's bootstrap
actions (``emr_options``), which install the release bundle when there is one, and then
no zip is shipped.

Output is streamed into a file (one ``JSON key \\t JSON value`` line per
row), never held in memory, so the PageRank driver can pass one iteration's
output on as the next iteration's input on any runner.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from mrjob.job import MRJob

from mapreduce.record_job import RecordBlockJob
from services.config import Settings
from services.indexing.emr_options import emr_args
from services.indexing.errors import JobError
from services.malloc import malloc_env

Counters = dict[str, dict[str, int]]


class _NoConfigNoise(logging.Filter):
    """Drop mrjob's "No configs specified" warning: no mrjob.conf is the normal case here
    (everything the jobs need is passed as options); other mrjob warnings still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No configs specified")


logging.getLogger("mrjob.conf").addFilter(_NoConfigNoise())


@dataclass
class JobOutput:
    path: Path  # local file with the job's output rows (``parts``: the folder holding them)
    counters: Counters = field(default_factory=dict)  # summed over the job's steps
    seconds: float = 0.0
    parts: tuple[Path, ...] = ()  # ``run_job(..., parts=True)``: each task's output file, in order

    def counter(self, group: str, name: str) -> int:
        return self.counters.get(group, {}).get(name, 0)


def read_rows(path: Path) -> Iterator[tuple[Any, Any]]:
    """Decode a job output file (JSONProtocol: ``key \\t value`` per line)."""
    with Path(path).open("rb") as fh:
        for line in fh:
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            key, _, value = line.partition(b"\t")
            yield json.loads(key), json.loads(value)


def write_rows(path: Path, rows: Iterator[tuple[Any, Any]]) -> int:
    """Write rows in the format jobs read with JSONProtocol; returns how many."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for key, value in rows:
            fh.write(f"{json.dumps(key)}\t{json.dumps(value)}\n")
            count += 1
    return count


def absolute_blob_url(url: str) -> str:
    """``file://`` URLs made absolute: tasks run in their own working directories."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return url
    path = (parsed.netloc + parsed.path) if parsed.netloc else parsed.path
    return "file://" + str(Path(path).resolve())


# What MapReduce tasks run: the jobs and the ground floor they import (the layer contract in
# pyproject.toml keeps ``mapreduce`` from importing anything else; a test checks the closure).
TASK_PACKAGES = (
    "mapreduce",
    "services.compiled",  # the job kernels' wrapper (compiled_for_jobs), and the formats import it
    "services.config",
    "services.errors",
    "services.malloc",
    "services.ranking",
    "services.storage",
    "services.text",
)
_SHIPPED_SUFFIXES = {".py", ".txt", ".json"}


def _task_files() -> list[tuple[str, bytes]]:
    """The files of ``TASK_PACKAGES`` with ``services/__init__.py``: (name in the zip, bytes),
    by name, each read once (a zip's name and its contents come from the same bytes)."""
    repo = Path(__file__).resolve().parents[2]
    files: set[Path] = {repo / "services" / "__init__.py"}
    for name in TASK_PACKAGES:
        module = repo.joinpath(*name.split("."))
        if module.is_dir():
            files.update(
                path
                for path in module.rglob("*")
                if path.is_file() and "__pycache__" not in path.parts and path.suffix in _SHIPPED_SUFFIXES
            )
        else:
            files.add(module.with_suffix(".py"))
    return [(path.relative_to(repo).as_posix(), path.read_bytes()) for path in sorted(files)]


def package_zip(dest: Path, files: Sequence[tuple[str, bytes]] | None = None) -> Path:
    """Zip ``TASK_PACKAGES`` (sources and data files) for the tasks, with ``services/__init__.py``
    (``files``: those already read)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in _task_files() if files is None else files:
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED, 1)
    return dest


# A zip not used for this long may be removed once newer ones are there: never one a build
# still running could be reading (builds take minutes here, hours at most on an indexer).
STALE_PACKAGE_SECONDS = 7 * 24 * 3600


def task_packages_folder() -> Path | None:
    """Where the tasks' zips are kept: beside numba's own cache (``~/.cache``, or
    ``XDG_CACHE_HOME``, where numba's ``ZipCacheLocator`` caches a zip's kernels), shared by
    every state folder of this user, so each version of the code compiles the job's kernel
    once on this machine. None when that folder cannot be written, or is not this user's
    alone (a zip there is code every task runs): the caller then ships a zip of its own and
    the tasks number tokens in Python (numba could not cache the kernel either)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nimbus" / "task-packages"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for level in (folder, folder.parent):
            st = level.stat()
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
        probe = folder / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError:
        return None
    return folder


def kernel_cache_lasts(settings: Settings) -> bool:
    """Whether numba's cache of the index job's kernel outlives a build on the configured
    runner: in process (``inline``: the sources' own), or from the shared zip (``local``,
    ``task_packages_folder``). Elsewhere every task would compile it again."""
    runner = settings.index.mr_runner
    return runner == "inline" or (runner == "local" and task_packages_folder() is not None)


def shared_package_zip(folder: Path) -> Path:
    """The tasks' zip in ``folder``, named by its files' contents, written once per version of
    them and shared by the builds that run it: numba caches a kernel imported from a zip under
    the zip's folder (its ``ZipCacheLocator``), so a zip at a new path each build compiled the
    index job's kernel (``rough_ids``) in every task of every build. Written to a temporary
    name and renamed, so a build never reads half a zip; each use marks it used, and zips
    unused for ``STALE_PACKAGE_SECONDS`` are removed when a new one is written."""
    files = _task_files()
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + data + b"\0")
    dest = folder / f"nimbus-packages-{digest.hexdigest()[:16]}.zip"
    if dest.exists():
        os.utime(dest)  # used now: not stale while builds run it
        return dest
    partial = folder / f".{dest.name}.{os.getpid()}.partial"
    try:
        package_zip(partial, files)
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    now = time.time()
    for other in folder.glob("nimbus-packages-*.zip"):
        try:
            if other != dest and now - other.stat().st_mtime > STALE_PACKAGE_SECONDS:
                other.unlink()
        except FileNotFoundError:
            continue  # another build removed it first
    return dest


# The environment of each task process (mrjob's cmdenv: the local runner's subprocesses, and
# Hadoop streaming's tasks on EMR); the inline runner shares this process and gets none.
TASK_ENV = {
    # Tasks keep the memory they free (``services.malloc``): an index mapper allocates and
    # frees hundreds of MB per flush and would fault the same pages in again each time.
    **malloc_env(trim_threshold=4 << 30, top_pad=256 << 20),
    # No transparent-huge-page hint on numpy arrays: where the kernel compacts memory on the
    # spot, the hint costs a map task more system time than it saves.
    "NUMPY_MADVISE_HUGEPAGE": "0",
}
# mrjob imports distutils, which setuptools' shim serves slowly through pkg_resources. Local
# tasks run this interpreter, whose standard library still has distutils before Python 3.12;
# EMR's interpreter may not, so it keeps the shim. Measurements: docs/performance-notes.md.
LOCAL_TASK_ENV = {"SETUPTOOLS_USE_DISTUTILS": "stdlib"} if sys.version_info < (3, 12) else {}


def runner_args(settings: Settings, scratch: Path) -> list[str]:
    """mrjob switches for the configured runner (and the project zip where tasks need it)."""
    runner = settings.index.mr_runner
    tmp = scratch / "mrjob-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    args = ["-r", runner, "--local-tmp-dir", str(tmp)]
    if runner == "inline":
        return args  # same process: the project is already importable
    if runner == "emr" and not settings.blob_url.startswith("s3://"):
        raise JobError(
            f"NIMBUS_MR_RUNNER=emr needs the record blocks in S3, but NIMBUS_BLOB_URL is "
            f"{settings.blob_url!r}: use s3://bucket/prefix, or the local runner"
        )
    if runner == "emr":
        args += emr_args(settings, scratch)
    env = {**TASK_ENV, **(LOCAL_TASK_ENV if runner == "local" else {})}
    shared = task_packages_folder() if runner == "local" else None
    if shared is not None:
        # The zip at its own path, not copied into each task's folder as ``--py-files`` is:
        # numba's cache of a kernel imported from a zip lives under the zip's path, so the
        # index job's kernel is compiled once per version of the code, not in every task.
        env["PYTHONPATH"] = str(shared_package_zip(shared))
    elif not (runner == "emr" and settings.deploy.release_url):  # a release holds the packages
        zip_path = scratch / "nimbus-packages.zip"
        if not zip_path.exists():  # one a build, for all its jobs
            package_zip(zip_path)
        args += ["--py-files", str(zip_path)]
    for name, value in env.items():
        args += ["--cmdenv", f"{name}={value}"]
    if runner == "local":
        # Local tasks run this interpreter, where mrjob is installed: skip zipping and
        # recompiling mrjob for every task (docs/performance-notes.md). EMR keeps the bootstrap.
        args.append("--no-bootstrap-mrjob")
    return args


def store_args(settings: Settings) -> list[str]:
    """The passthrough options a ``RecordBlockJob`` opens the blob store with."""
    args = ["--blob-url", absolute_blob_url(settings.blob_url)]
    if settings.aws_endpoint_url:
        args += ["--aws-endpoint-url", settings.aws_endpoint_url]
    return args


def run_job(
    job_class: type[MRJob],
    inputs: Sequence[Path | str],
    settings: Settings,
    *,
    output: Path,
    scratch: Path,
    extra_args: Sequence[str] = (),
    parts: bool = False,
) -> JobOutput:
    """Run ``job_class`` over ``inputs`` and stream its output into ``output``.

    ``parts`` (this machine's runners only): the output's part files, one a task, are moved
    into the folder ``output`` as they are, not copied into one file (a map-only job's files
    are each sorted by term within a flush: ``services.indexing.job_pieces``)."""
    if parts and settings.index.mr_runner not in ("inline", "local"):
        raise JobError(f"the {settings.index.mr_runner} runner's output is not local files: no parts to keep")
    args = runner_args(settings, scratch)
    if issubclass(job_class, RecordBlockJob):
        args += store_args(settings)
    args += [*extra_args, *(str(p) for p in inputs)]
    job = job_class(args=args)
    started = time.monotonic()
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with job.make_runner() as runner:
            runner.run()
            kept: tuple[Path, ...] = ()
            if parts:
                kept = _move_parts(runner, output)
            else:
                with output.open("wb") as fh:
                    _copy_output(runner, settings.index.mr_runner, fh)
            counters = _sum_counters(runner.counters())
    except Exception as exc:
        where = "the task's traceback is logged above"
        if settings.index.mr_runner == "emr":
            bucket = urlparse(settings.blob_url).netloc
            where = f"the step's logs are under s3://{bucket}/emr/tmp/logs/"
        raise JobError(
            f"{job_class.__name__} failed on the {settings.index.mr_runner} runner over "
            f"{', '.join(map(str, inputs))}: {exc} ({where})"
        ) from exc
    return JobOutput(path=output, counters=counters, seconds=time.monotonic() - started, parts=kept)


def _output_parts(root: Path) -> list[Path]:
    """A local job's output files, in order: like mrjob and Hadoop, names starting with "_" or
    "." (_SUCCESS, .crc) are not output."""
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and not any(name[0] in "_." for name in path.relative_to(root).parts)
    )


def _move_parts(runner: Any, dest: Path) -> tuple[Path, ...]:
    """The job's output parts moved (renamed: the same file system) into the folder ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    moved = []
    for i, part in enumerate(_output_parts(Path(runner.get_output_dir()))):
        target = dest / f"part-{i:05d}"
        shutil.move(part, target)
        moved.append(target)
    return tuple(moved)


def _copy_output(runner: Any, runner_name: str, dest: BinaryIO) -> None:
    """The job's output parts, in order, into ``dest``.

    On this machine's runners the parts are local files, copied in 16 MB
    pieces: mrjob's ``cat_output`` yields them line by line, several times
    slower (docs/performance-notes.md). Elsewhere (EMR's S3) it is the way
    to read them.
    """
    if runner_name not in ("inline", "local"):
        for chunk in runner.cat_output():
            dest.write(chunk)
        return
    for part in _output_parts(Path(runner.get_output_dir())):
        with part.open("rb") as src:
            shutil.copyfileobj(src, dest, 16 << 20)


def _sum_counters(per_step: list[Counters]) -> Counters:
    total: Counters = {}
    for step in per_step:
        for group, values in step.items():
            bucket = total.setdefault(group, {})
            for name, value in values.items():
                bucket[name] = bucket.get(name, 0) + value
    return total
