"""``systemctl`` on the rehearsal's instance: it runs the generated units' real command lines.

What it does of systemd's work, for the units named in its configuration (the others are
recorded as enabled and left alone: the journal follower and agents need a real journald):

* reads the unit under the scratch root; ``Environment=`` and ``EnvironmentFile=`` (``-``:
  may be missing), read again before each command as systemd does, over systemd's own
  environment (``PATH``, ``LANG``; ``HOME``, ``USER`` of ``User=``);
* creates ``StateDirectory=`` and ``RuntimeDirectory=`` folders;
* answers ``show UNIT -p NAME…`` with the state of the process it started (what the
  bootstrap's health check reads);
* runs each ``ExecStartPre=`` in order (``+``: privileged, ``-``: its failure ignored), failing
  the start as systemd does when one fails, then starts ``ExecStart=`` in the background,
  its output in ``var/log/journal/UNIT.log`` (the journal's stand-in) and its pid in the log
  folder; ``${VAR}`` is one word, ``$VAR`` splits into words, as in unit files.

The instance's absolute paths in commands and settings (``/opt/…``, ``/etc/…``, ``/var/…``,
``/run/…``) are read under the scratch root. Not done here: ``User=`` (the commands run as
this test's user), the sandboxing directives, ``Restart=``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

INSTANCE_PATH = re.compile(r"^/(opt|etc|var|run|root)/")
BRACED, WORD = re.compile(r"\$\{(\w+)\}"), re.compile(r"^\$(\w+)$")


def main(argv: list[str], config: dict[str, Any]) -> int:
    log = Path(config["log"])
    with (log / "systemctl.calls").open("a") as calls:
        calls.write(shlex.join(argv) + "\n")
    if argv[:1] == ["show"]:
        return _show(argv[1:], log)
    args = [a for a in argv if not a.startswith("-")]
    verb, units = (args[0], args[1:]) if args else ("", [])
    if verb in {"start", "restart"} or (verb == "enable" and "--now" in argv):
        for unit in units:
            if unit in config["start"] and not _start(unit, config):
                print(
                    f"Job for {unit} failed. See {config['root']}/var/log/journal/{unit}.log", file=sys.stderr
                )
                return 1
    if verb == "is-active":
        return 0 if all(_running(unit, log) for unit in units) else 3
    return 0


def _show(argv: list[str], log: Path) -> int:
    """``systemctl show UNIT -p NAME…``: the properties nimbus-health reads, as ``NAME=value``
    lines; a unit this stand-in started is running (or dead, once its process is gone)."""
    units = [a for i, a in enumerate(argv) if not a.startswith("-") and (i == 0 or argv[i - 1] != "-p")]
    names = [argv[i + 1] for i, a in enumerate(argv) if a == "-p" and i + 1 < len(argv)]
    for unit in units:
        pid_file = log / f"{unit}.pid"
        running = _running(unit, log)
        values = {
            "ActiveState": "active" if running else "inactive",
            "SubState": "running" if running else "dead",
            "Result": "success",
            "NRestarts": "0",
            "ExecMainPID": pid_file.read_text() if running else "0",
            "ExecMainStatus": "0",
            "ExecMainStartTimestampMonotonic": "1" if pid_file.is_file() else "0",
            "ExecMainExitTimestampMonotonic": "0" if running else "1",
        }
        for name in names or list(values):
            print(f"{name}={values.get(name, '')}")
    return 0


def _running(unit: str, log: Path) -> bool:
    pid_file = log / f"{unit}.pid"
    if not pid_file.is_file():
        return False
    try:
        os.kill(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return False
    return True


def _start(unit: str, config: dict[str, Any]) -> bool:
    root = Path(config["root"])
    path = root / "etc/systemd/system" / unit
    service = _section(path.read_text(), "Service")
    journal = root / "var/log/journal" / f"{unit}.log"
    journal.parent.mkdir(parents=True, exist_ok=True)
    user = service.get("User", ["root"])[-1]
    home = "/root" if user == "root" else f"/var/lib/{user}"  # the bootstrap's useradd --home-dir
    for key, parent in (("StateDirectory", "var/lib"), ("RuntimeDirectory", "run")):
        for name in " ".join(service.get(key, [])).split():
            (root / parent / name).mkdir(parents=True, exist_ok=True)
    base = {
        "PATH": config["path"],
        "LANG": "C.UTF-8",
        "HOME": _moved(home, root),
        "USER": user,
        "LOGNAME": user,
    }
    with journal.open("ab") as out:
        for line in service.get("ExecStartPre", []):
            flags, command = _flags(line)
            env = _environment(service, base, config, root)
            done = subprocess.run(_words(command, env, root), env=env, cwd=root, stdout=out, stderr=out)
            if done.returncode != 0 and "-" not in flags:
                return False
        flags, command = _flags(service["ExecStart"][-1])
        env = _environment(service, base, config, root)
        process = subprocess.Popen(
            _words(command, env, root), env=env, cwd=root, stdout=out, stderr=out, start_new_session=True
        )
    (Path(config["log"]) / f"{unit}.pid").write_text(str(process.pid))
    return True


def _section(text: str, name: str) -> dict[str, list[str]]:
    """The directives of one section, each with its values in order (directives may repeat)."""
    found: dict[str, list[str]] = {}
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif current == name and "=" in line and not line.startswith(("#", ";")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def _flags(line: str) -> tuple[str, str]:
    """A command's prefixes (``+-!@:``) and the command."""
    stripped = line.lstrip("+-!@:")
    return line[: len(line) - len(stripped)], stripped


def _environment(service: dict[str, list[str]], base: dict[str, str], config: dict[str, Any], root: Path):
    env = {**base, **config["env"]}
    for value in service.get("Environment", []):
        for assignment in shlex.split(value):
            key, _, text = assignment.partition("=")
            env[key] = _moved(text, root)
    for value in service.get("EnvironmentFile", []):
        optional, name = value.startswith("-"), value.lstrip("-")
        file = Path(_moved(name, root))
        if not file.is_file():
            if optional:
                continue
            raise FileNotFoundError(f"EnvironmentFile={name}: no such file")
        for line in file.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith(("#", ";")) and "=" in line:
                key, text = line.split("=", 1)
                env[key.strip()] = _moved(text.strip(), root)
    return env


def _words(command: str, env: dict[str, str], root: Path) -> list[str]:
    words: list[str] = []
    for word in shlex.split(command):
        if whole := WORD.match(word):
            words.extend(env.get(whole.group(1), "").split())
        else:
            words.append(_moved(BRACED.sub(lambda m: env.get(m.group(1), ""), word), root))
    return words


def _moved(text: str, root: Path) -> str:
    """An instance path under the scratch root; anything else as it is."""
    return f"{root}{text}" if INSTANCE_PATH.match(text) else text
