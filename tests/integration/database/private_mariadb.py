"""A private MariaDB server for one test module: its own data directory, port and socket, and
TLS with a CA and server certificate made here (``cryptography``), ``require_secure_transport``
on, as the stack's RDS parameter group sets it. The shared server on 3306 cannot be
reconfigured for a test; this one starts in about a second once its data directory exists
(``mariadb-install-db``, a few seconds), and is stopped and deleted with the module."""

from __future__ import annotations

import datetime
import functools
import ipaddress
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pymysql

from tests.polling import wait_for

INSTALL_DB, SERVER = shutil.which("mariadb-install-db"), "/usr/sbin/mariadbd"


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA that signed the server's certificate
    other_ca: Path  # a CA that did not
    cert: Path  # the server's certificate: IP 127.0.0.1 only (not "localhost")
    key: Path


def make_certificates(folder: Path) -> Certificates:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def builder(
        subject: str, issuer: x509.Name, public: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(issuer)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    def ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            builder(common, name(common), key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return key, cert

    def pem(path: Path, cert: x509.Certificate) -> Path:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return path

    ca_key, ca_cert = ca("Nimbus test CA")
    _, other = ca("Some other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        builder("127.0.0.1", ca_cert.subject, key.public_key())
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_path = folder / "server-key.pem"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return Certificates(
        pem(folder / "ca.pem", ca_cert),
        pem(folder / "other-ca.pem", other),
        pem(folder / "server.pem", cert),
        key_path,
    )


@dataclass(frozen=True)
class PrivateServer:
    port: int
    socket: Path
    certificates: Certificates

    def root(self) -> pymysql.Connection:
        """root (no password: a server of this test's alone) over the Unix socket, a secure
        transport: no TLS needed."""
        return pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def private_mariadb(folder: Path) -> Iterator[PrivateServer]:
    if INSTALL_DB is None or not Path(SERVER).exists():
        raise RuntimeError(
            "MariaDB's server is not installed (mariadb-install-db, mariadbd): run `make services`"
        )
    data, run = folder / "data", folder / "run"
    run.mkdir(parents=True)
    certificates = make_certificates(folder)
    # As root, both would hand the files to the mysql user, who cannot enter pytest's folders.
    as_root = ["--user=root"] if os.geteuid() == 0 else []
    installed = subprocess.run(
        [
            INSTALL_DB,
            "--no-defaults",  # not /etc/mysql's settings (its user, its socket)
            *as_root,
            f"--datadir={data}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ],
        capture_output=True,
        text=True,
    )
    if installed.returncode:
        raise RuntimeError(f"mariadb-install-db failed: {installed.stdout[-1500:]}{installed.stderr[-1500:]}")
    sock, log = run / "mysqld.sock", run / "error.log"
    for _attempt in range(3):  # the free port may be taken between finding and binding it
        port = _free_port()
        process = subprocess.Popen(
            [
                SERVER,
                "--no-defaults",
                *as_root,
                f"--datadir={data}",
                f"--socket={sock}",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                f"--pid-file={run / 'mysqld.pid'}",
                f"--log-error={log}",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=16M",
                f"--ssl-ca={certificates.ca}",
                f"--ssl-cert={certificates.cert}",
                f"--ssl-key={certificates.key}",
                "--require-secure-transport=ON",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(functools.partial(_started, process, sock), timeout=30, what="the private MariaDB")
        except AssertionError:
            process.terminate()
            raise
        if process.poll() is None:
            break
    else:
        raise RuntimeError(f"the private MariaDB did not start: {log.read_text()[-2000:]}")
    try:
        yield PrivateServer(port, sock, certificates)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(data, ignore_errors=True)


def _started(process: subprocess.Popen[bytes], sock: Path) -> bool:
    """Accepting connections, or ended (its port taken: the caller tries another)."""
    return process.poll() is not None or _ready(sock)


def _ready(sock: Path) -> bool:
    try:
        pymysql.connect(unix_socket=str(sock), user="root", connect_timeout=1).close()
    except pymysql.err.OperationalError:
        return False  # not yet: the caller polls
    return True
