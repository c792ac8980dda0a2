"""checkov, the IaC security scanner, passes the template: every check passes or is skipped
with a reason written next to the resource (``Metadata: checkov: skip``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from services.deploy.template import TEMPLATE, load

CHECKOV = Path(__file__).resolve().parents[3] / ".venv-iac" / "bin" / "checkov"
OFFLINE = {"BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"}


def _scan(path: Path) -> dict:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} missing: run `make iac` (make test does)")
    done = subprocess.run(
        [
            str(CHECKOV),
            "-f",
            str(path),
            "--framework",
            "cloudformation",
            "--quiet",
            "--skip-download",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE},
        check=False,
    )
    return json.loads(done.stdout)


def test_checkov_finds_no_failed_check() -> None:
    report = _scan(TEMPLATE)
    assert report["summary"]["failed"] == 0, report["results"].get("failed_checks")
    assert report["summary"]["passed"] >= 60 and report["summary"]["parsing_errors"] == 0


def test_every_skip_says_why() -> None:
    for name, resource in load()["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert len(skip.get("comment", "")) > 20, (name, skip["id"])


def test_checkov_would_fail_an_open_database(tmp_path: Path) -> None:
    """The scan can fail: a publicly accessible, unencrypted database is reported."""
    text = TEMPLATE.read_text().replace("StorageEncrypted: true", "StorageEncrypted: false")
    text = text.replace("PubliclyAccessible: false", "PubliclyAccessible: true")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    failed = {c["check_id"] for c in _scan(bad)["results"]["failed_checks"]}
    assert {"CKV_AWS_16", "CKV_AWS_17"} <= failed
