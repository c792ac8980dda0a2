"""A private MariaDB server standing for the stack's RDS instance: its own data folder and port,
listening where the instance can reach it, with the database and the master user RDS creates.
Ready in about a second (docs: /work/shared/NOTES.md)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pymysql
import pytest

from tests.integration.release.conftest import free_port
from tests.polling import wait_for


@contextmanager
def mariadb_server(
    folder: Path, host: str, database: str, user: str, password: str, tls: tuple[Path, Path, Path]
) -> Iterator[int]:
    """Start the server on ``host``, create ``database`` and ``user`` with all rights on it (as
    RDS's master user has); yields the port. ``tls`` is (CA, certificate, key): the server
    refuses connections without TLS, as the stack's parameter group makes RDS do
    (``require_secure_transport``)."""
    ca, certificate, key = tls
    installer, server = shutil.which("mariadb-install-db"), shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    if installer is None or not Path(server).is_file():
        pytest.fail("MariaDB is not installed: run `make services`")
    data, socket = folder / "data", folder / "mysqld.sock"
    done = subprocess.run(
        [installer, "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
         "--skip-test-db", "--user=root"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    port = free_port()
    process = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={data}", f"--socket={socket}", f"--port={port}",
         f"--bind-address={host}", "--user=root", "--skip-log-bin", "--skip-name-resolve",
         "--innodb-buffer-pool-size=32M", f"--pid-file={folder / 'mysqld.pid'}",
         f"--ssl-ca={ca}", f"--ssl-cert={certificate}", f"--ssl-key={key}", "--require-secure-transport=ON"],
        stdout=subprocess.DEVNULL, stderr=(folder / "error.log").open("wb"),
    )  # fmt: skip
    try:
        wait_for(lambda: process.poll() is not None or _answers(socket), timeout=60, what="MariaDB to start")
        assert process.poll() is None, (folder / "error.log").read_text()[-2000:]
        admin = pymysql.connect(unix_socket=str(socket), user="root")
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {database} CHARACTER SET utf8mb4")
            cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))
            cursor.execute(f"GRANT ALL PRIVILEGES ON {database}.* TO %s@'%%'", (user,))
        admin.close()
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(data, ignore_errors=True)  # 100 MB of system tables


def _answers(socket: Path) -> bool:
    try:
        pymysql.connect(unix_socket=str(socket), user="root").close()
    except pymysql.err.OperationalError:
        return False
    return True
