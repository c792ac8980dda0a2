"""``aws`` on the rehearsal's instance: the two AWS CLI calls the boot makes, through boto3.

``aws s3 cp SRC DEST [--recursive]`` (either side ``s3://``) and ``aws secretsmanager
get-secret-value --secret-id ID [--query SecretString --output text]``, with ``--region`` and
the output options the AWS CLI takes. boto3 finds the endpoint in ``AWS_ENDPOINT_URL`` and the
instance role's credentials at ``AWS_EC2_METADATA_SERVICE_ENDPOINT``, both moto here, as the
real CLI would on EC2. Anything else fails, naming itself, so a new call in the bootstrap is
noticed rather than silently skipped.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

QUIET = {"--only-show-errors", "--quiet", "--no-progress"}


def main(argv: list[str], config: dict[str, Any]) -> int:
    with (Path(config["log"]) / "aws.calls").open("a") as calls:
        calls.write(shlex.join(argv) + "\n")
    options: dict[str, str] = {}
    flags: set[str] = set()
    words: list[str] = []
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word in QUIET or word == "--recursive":
            flags.add(word)
        elif word.startswith("--"):
            options[word] = rest.pop(0)
        else:
            words.append(word)
    import boto3

    session = boto3.Session(region_name=options.get("--region"))
    if words[:2] == ["s3", "cp"] and len(words) == 4:
        _copy(session.client("s3"), words[2], words[3], "--recursive" in flags)
        return 0
    if words == ["secretsmanager", "get-secret-value"] and "--secret-id" in options:
        found = session.client("secretsmanager").get_secret_value(SecretId=options["--secret-id"])
        if options.get("--query") == "SecretString" and options.get("--output") == "text":
            print(found["SecretString"])
        else:
            print(found)
        return 0
    print(f"aws (rehearsal): `aws {shlex.join(argv)}` is not one the rehearsal knows", file=sys.stderr)
    return 2


def _copy(s3: Any, source: str, dest: str, recursive: bool) -> None:
    if not source.startswith("s3://") or dest.startswith("s3://"):
        raise SystemExit(f"aws (rehearsal): only downloads are known, not {source} -> {dest}")
    bucket, _, key = source.removeprefix("s3://").partition("/")
    if not recursive:
        target = Path(dest) / Path(key).name if dest.endswith("/") else Path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, key, str(target))
        return
    prefix = key if key.endswith("/") or not key else key + "/"
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            target = Path(dest) / item["Key"][len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, item["Key"], str(target))
