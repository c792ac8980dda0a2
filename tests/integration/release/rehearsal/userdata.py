"""A launch template's user data from ``infra/nimbus.yaml``, rendered as CloudFormation would and
moved under a scratch root.

CloudFormation substitutes ``${Name}`` (a parameter, a resource, a pseudo parameter or one of
the ``!Sub``'s own variables) and turns ``${!Name}`` into ``${Name}``; the rehearsal does the
same with test values, and fails naming a variable it has no value for. Then every path of
the instance (``/root/``, ``/opt/``, ``/etc/``, ``/var/``, ``/run/``) is moved under the scratch
root, and the bootstrap is told that root (``--root``): the rest runs as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from services.deploy import template

VARIABLE = re.compile(r"\$\{(!?)([^}]*)\}")
INSTANCE_PATH = re.compile(r"(?<![\w/.:$}-])/(root|opt|etc|var|run)/")
RUNS_BOOTSTRAP = re.compile(r"(\bbash\s+)(\S*/nimbus-bootstrap\.sh\"?)")


def launch_template_user_data(resource: str) -> tuple[str, dict[str, Any]]:
    """The ``!Sub`` text of ``resource``'s user data and the ``!Sub``'s own variables."""
    data = template.load()["Resources"][resource]["Properties"]["LaunchTemplateData"]["UserData"]
    sub = data["Fn::Base64"]["Fn::Sub"]
    return (sub, {}) if isinstance(sub, str) else (sub[0], dict(sub[1]))


def render(text: str, own: Mapping[str, Any], values: Mapping[str, str]) -> str:
    """``text`` with every ``${Name}`` replaced: an own variable that is a plain string by
    itself, any other name (an own variable that is a function, a parameter, a resource) by
    ``values``."""

    def value(match: re.Match[str]) -> str:
        literal, name = match.groups()
        if literal:
            return "${" + name + "}"
        if isinstance(own.get(name), str):
            return str(own[name])
        if name not in values:
            pytest.fail(f"the user data uses ${{{name}}}: give the rehearsal a test value for it")
        return values[name]

    return VARIABLE.sub(value, text)


def under_root(text: str, root: Path) -> str:
    """The user data with the instance's paths under ``root`` and the bootstrap run with
    ``--root``; fails when it no longer runs ``bash …/nimbus-bootstrap.sh`` once."""
    moved = INSTANCE_PATH.sub(lambda m: f"{root}/{m.group(1)}/", text)
    moved, runs = RUNS_BOOTSTRAP.subn(lambda m: f"{m.group(1)}{m.group(2)} --root {root}", moved)
    if runs != 1:
        pytest.fail(f"the user data runs `bash …/nimbus-bootstrap.sh` {runs} times, not once:\n{text}")
    return moved
