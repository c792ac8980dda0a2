"""The CloudFormation template: where it lives, its checks, and the form APIs accept.

Operators read and review YAML with the short intrinsic functions (``!Sub``,
``!GetAtt``); CloudFormation accepts it as is, but emulators (moto) split
``!GetAtt Db.Endpoint.Address`` on every dot. cfn-lint's decoder turns the
YAML into plain JSON with the long forms, which every consumer reads alike.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from services.deploy.errors import TemplateError

TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "nimbus.yaml"
BOOTSTRAP = Path(__file__).resolve().parents[2] / "infra" / "bootstrap" / "nimbus-bootstrap.sh"


def load(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as data (intrinsics in their long JSON form)."""
    from cfnlint.decode import decode_str

    if not path.is_file():
        raise TemplateError(f"{path}: template not found (run from a checkout of the repository)")
    template, matches = decode_str(path.read_text())
    if matches or template is None:
        raise TemplateError(f"{path}: not a readable template: {'; '.join(str(m) for m in matches)}")
    return dict(template)


def body(path: Path = TEMPLATE) -> str:
    """The template as the JSON text sent to CloudFormation."""
    return json.dumps(load(path), separators=(",", ":"), default=str)


def lint(path: Path = TEMPLATE) -> list[str]:
    """cfn-lint's findings, one line each (empty: clean). Several seconds for this template:
    remembered per content, so a process that deploys several times lints once."""
    return list(_lint(path, hashlib.sha256(path.read_bytes()).hexdigest()))


@functools.lru_cache(maxsize=8)
def _lint(path: Path, _digest: str) -> tuple[str, ...]:
    from cfnlint.api import lint_file

    return tuple(f"{m.rule.id} {m.message} ({path.name}:{m.linenumber})" for m in lint_file(path))


def parameter_names(template: dict[str, Any]) -> set[str]:
    return set(template.get("Parameters", {}))
