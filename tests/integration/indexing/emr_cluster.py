"""An EMR cluster played by the test, on moto: every Hadoop streaming step mrjob submits
is really run, from the files and input it uploaded to S3, into the output it named.

moto accepts RunJobFlow and AddJobFlowSteps but never runs a step; this
plays the cluster's part the way Hadoop streaming would: download ``-files``
into a working directory, feed the ``-input`` objects (gzip decompressed, as
Hadoop does) through ``-mapper``, sort, run ``-combiner`` and ``-reducer``,
write ``part-00000`` and ``_SUCCESS`` under ``-output``, and mark the step
COMPLETED (FAILED, with the task's stderr, when a command fails). So a wrong
input path, a module missing from the shipped zip or a bad step argument
fails the test as it would fail on EMR.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3

ACCOUNT = "123456789012"


@dataclass
class StreamingStep:
    files: list[tuple[str, str]] = field(default_factory=list)  # (s3 uri, local name)
    archives: list[tuple[str, str]] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    output: str = ""
    mapper: str = ""
    combiner: str = ""
    reducer: str = ""
    env: dict[str, str] = field(default_factory=dict)


def parse_streaming(args: list[str]) -> StreamingStep:
    step = StreamingStep()
    it = iter(args[1:] if args and args[0] == "hadoop-streaming" else args)
    for flag in it:
        value = next(it, "")
        if flag == "-files":
            step.files += [tuple(f.split("#", 1)) for f in value.split(",")]  # type: ignore[misc]
        elif flag == "-archives":
            step.archives += [tuple(f.split("#", 1)) for f in value.split(",")]  # type: ignore[misc]
        elif flag == "-input":
            step.inputs.append(value)
        elif flag == "-output":
            step.output = value
        elif flag in {"-mapper", "-combiner", "-reducer"}:
            setattr(step, flag[1:], value)
        elif flag == "-cmdenv":
            name, _, val = value.partition("=")
            step.env[name] = val
        elif flag in {"-D", "-libjars", "-partitioner", "-outputformat", "-inputformat"}:
            continue
        else:
            raise ValueError(f"streaming flag {flag!r} not understood by the test cluster")
    return step


class PlayedCluster:
    def __init__(self, endpoint: str, region: str = "us-east-1") -> None:
        self.s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region)
        self.region = region
        self.stop = threading.Event()
        self.done: list[tuple[str, str]] = []  # (step name, final state)
        self.errors: list[str] = []
        self.bootstrap: dict[str, dict[str, str]] = {}  # cluster id -> action name -> script
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.python_bin = Path(tempfile.mkdtemp(prefix="emr-bin-"))
        self.hdfs = Path(tempfile.mkdtemp(prefix="emr-hdfs-"))
        # The nodes' Python 3.11 with the release wheel installed (the bootstrap actions'
        # work, asserted by the test): this venv's interpreter.
        for name in ("python3", "python3.11", "python"):
            shim = self.python_bin / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            shim.chmod(0o755)

    def __enter__(self) -> PlayedCluster:
        self.before = {c.id for c in self._all()}  # other tests' clusters on the shared server
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def _all(self) -> list[Any]:
        from moto.emr.models import emr_backends

        return list(emr_backends[ACCOUNT][self.region].clusters.values())

    def clusters(self) -> list[Any]:
        """The clusters started while this one played (not earlier tests')."""
        return [c for c in self._all() if c.id not in self.before]

    def _loop(self) -> None:
        while not self.stop.wait(0.05):
            for cluster in self.clusters():
                if cluster.id not in self.bootstrap:  # read now: mrjob deletes its files after
                    self.bootstrap[cluster.id] = {
                        a.name: self._get(a.script_path).decode() for a in cluster.bootstrap_actions
                    }
                for step in cluster.steps:
                    if step.state in {"PENDING", "RUNNING"}:
                        self._run(step)
                if cluster.state == "RUNNING" and all(
                    s.state in {"COMPLETED", "FAILED"} for s in cluster.steps
                ):
                    cluster.state = "WAITING"  # idle, as a pooled cluster is between jobs

    def _run(self, step: Any) -> None:
        try:
            self._stream(parse_streaming(list(step.args)))
        except Exception as exc:  # noqa: BLE001 - reported to mrjob as a failed step, and to the test
            self.errors.append(f"{step.name}: {exc}")
            step.state = "FAILED"
        else:
            step.state = "COMPLETED"
        self.done.append((step.name, step.state))

    def _get(self, uri: str) -> bytes:
        parsed = urlparse(uri)
        return self.s3.get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))["Body"].read()

    def _hdfs(self, uri: str) -> Path:
        """The cluster's HDFS (intermediate output between a job's steps): a local folder."""
        return self.hdfs / urlparse(uri).path.lstrip("/")

    def _inputs(self, uri: str) -> list[bytes]:
        if uri.startswith("hdfs://"):
            root = self._hdfs(uri)
            parts = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))
            if not parts:
                raise FileNotFoundError(f"input {uri} matches no file in HDFS")
            return [p.read_bytes() for p in parts]
        parsed = urlparse(uri)
        bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
        listed = self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        keys = [
            o["Key"] for o in listed if o["Key"] == prefix or o["Key"].startswith(prefix.rstrip("/") + "/")
        ]
        keys = [k for k in keys if not Path(k).name.startswith(("_", "."))]
        if not keys:
            raise FileNotFoundError(f"input {uri} matches no object")
        out = []
        for key in sorted(keys):
            data = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            out.append(gzip.decompress(data) if key.endswith(".gz") else data)
        return out

    def _stream(self, step: StreamingStep) -> None:
        with tempfile.TemporaryDirectory(prefix="emr-task-") as tmp:
            work = Path(tmp)
            for uri, name in step.files:
                (work / name).write_bytes(self._get(uri))
            for uri, name in step.archives:
                archive = work / f"{name}.archive"
                archive.write_bytes(self._get(uri))
                with zipfile.ZipFile(archive) as zf:
                    zf.extractall(work / name)
            env = {**os.environ, **step.env, "PATH": f"{self.python_bin}:{os.environ['PATH']}"}
            data = b"".join(
                chunk if chunk.endswith(b"\n") or not chunk else chunk + b"\n"
                for chunk in (c for uri in step.inputs for c in self._inputs(uri))
            )
            out = self._task(step.mapper, data, work, env)
            if step.reducer:
                out = _sorted(out)
                if step.combiner:
                    out = _sorted(self._task(step.combiner, out, work, env))
                out = self._task(step.reducer, out, work, env)
            if step.output.startswith("hdfs://"):
                root = self._hdfs(step.output)
                root.mkdir(parents=True, exist_ok=True)
                (root / "part-00000").write_bytes(out)
                return
            parsed = urlparse(step.output)
            prefix = parsed.path.lstrip("/").rstrip("/")
            self.s3.put_object(Bucket=parsed.netloc, Key=f"{prefix}/part-00000", Body=out)
            self.s3.put_object(Bucket=parsed.netloc, Key=f"{prefix}/_SUCCESS", Body=b"")

    @staticmethod
    def _task(command: str, data: bytes, work: Path, env: dict[str, str]) -> bytes:
        done = subprocess.run(
            ["/bin/sh", "-c", command], input=data, cwd=work, env=env, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{command!r} exited {done.returncode}: {done.stderr.decode()[-3000:]}")
        return done.stdout


def _sorted(lines: bytes) -> bytes:
    """Hadoop's shuffle on one reducer: lines ordered by their bytes (key, then value)."""
    return b"".join(sorted(lines.splitlines(keepends=True)))
