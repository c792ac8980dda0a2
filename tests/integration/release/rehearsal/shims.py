"""The stand-ins, written as executables into a folder put first on the instance's PATH.

Each records its arguments, one shell-quoted line a call, in ``LOG/NAME.calls``:

* ``dnf`` installs nothing; for a package whose program the bootstrap then runs, it puts a
  recording stand-in where Amazon Linux's package puts it, under the scratch root (the
  CloudWatch agent's ctl; cfn-signal of aws-cfn-bootstrap). Python 3.11 is this machine's.
* ``useradd`` adds no user (the commands then run as this test's user); ``--create-home``
  makes the home folder under the scratch root, as useradd would. ``runuser -u USER -- CMD``
  records its arguments and runs CMD as this test's user.
* ``cfn-signal`` (on PATH and at /opt/aws/bin, where the AMI has it) and the CloudWatch
  agent's ctl only record: no CloudFormation or agent here.
* ``systemctl`` and ``aws`` (``rehearsal.systemctl``, ``rehearsal.aws_cli``).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[4]
CFN_SIGNAL = "opt/aws/bin/cfn-signal"
AGENT_CTL = "opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"


def calls(log: Path, name: str) -> list[list[str]]:
    """Every recorded call of the stand-in ``name``, as its argument lists."""
    file = log / f"{name}.calls"
    return [shlex.split(line) for line in file.read_text().splitlines()] if file.is_file() else []


def _recorder(log: Path, name: str) -> str:
    return (
        "#!/usr/bin/env bash\n"
        f"# {name} on the boot rehearsal's instance: records its arguments and succeeds.\n"
        f"{{ printf '%q ' \"$@\"; echo; }} >> {shlex.quote(str(log / f'{name}.calls'))}\n"
    )


def _python(module: str, config: dict[str, Any]) -> str:
    return (
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        f"from tests.integration.release.rehearsal.{module} import main\n"
        f"sys.exit(main(sys.argv[1:], json.loads({json.dumps(config)!r})))\n"
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def install_shims(bin_dir: Path, root: Path, log: Path, systemctl: dict[str, Any]) -> None:
    """The stand-ins into ``bin_dir``; ``systemctl``: its configuration (units to start, the
    PATH and extra environment of their processes)."""
    log.mkdir(parents=True, exist_ok=True)
    config = {"root": str(root), "log": str(log)}
    recorder = _recorder(log, "cfn-signal")
    _write(bin_dir / "cfn-signal", recorder)
    _write(root / CFN_SIGNAL, recorder)  # the AMI's aws-cfn-bootstrap
    _write(bin_dir / "systemctl", _python("systemctl", {**config, **systemctl}))
    _write(bin_dir / "aws", _python("aws_cli", config))
    packaged = bin_dir / "packaged"  # what dnf "installs": recorders of the packages' programs
    _write(packaged / "amazon-cloudwatch-agent", _recorder(log, "amazon-cloudwatch-agent-ctl"))
    _write(packaged / "aws-cfn-bootstrap", recorder)
    q = shlex.quote
    _write(
        bin_dir / "dnf",
        _recorder(log, "dnf")
        + '[ "${1-}" = install ] || exit 0\n'
        + 'for package in "$@"; do\n  case "$package" in\n'
        + f"    amazon-cloudwatch-agent) target={q(str(root / AGENT_CTL))} ;;\n"
        + f"    aws-cfn-bootstrap) target={q(str(root / CFN_SIGNAL))} ;;\n"
        + "    *) continue ;;\n  esac\n"
        + f'  install -D -m 0755 {q(str(packaged))}/"$package" "$target"\ndone\n',
    )
    _write(
        bin_dir / "runuser",
        _recorder(log, "runuser")
        + 'while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n',
    )
    _write(
        bin_dir / "useradd",
        _recorder(log, "useradd")
        + 'home="" create=0\n'
        + "while [ $# -gt 0 ]; do\n"
        + '  case "$1" in\n'
        + '    -d|--home-dir) home="$2"; shift 2 ;;\n'
        + "    -m|--create-home) create=1; shift ;;\n"
        + "    *) shift ;;\n  esac\ndone\n"
        + f'[ "$create" = 0 ] || [ -z "$home" ] || install -d -m 0700 {q(str(root))}"$home"\n',
    )
