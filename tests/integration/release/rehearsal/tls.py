"""A certificate authority standing for RDS's: the release ships its certificate as ``rds-ca.pem``
and the rehearsal's database serves a certificate it signed for the instance's address, so the
instance's processes verify the database as they verify RDS (``NIMBUS_DATABASE_TLS_CA``)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"openssl {' '.join(args)}: {done.stderr}"


@dataclass(frozen=True)
class RehearsalCA:
    folder: Path

    @property
    def certificate(self) -> Path:
        return self.folder / "ca.pem"

    @classmethod
    def create(cls, folder: Path) -> RehearsalCA:
        folder.mkdir(parents=True, exist_ok=True)
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Rehearsal RDS CA",
            "-keyout", "ca.key", "-out", "ca.pem", cwd=folder,
        )  # fmt: skip
        return cls(folder)

    def issue(self, ip: str) -> tuple[Path, Path]:
        """A server certificate and key for ``ip`` (as its subjectAltName: PyMySQL checks it)."""
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={ip}",
            "-keyout", f"{ip}.key", "-out", f"{ip}.csr", cwd=self.folder,
        )  # fmt: skip
        (self.folder / f"{ip}.ext").write_text(f"subjectAltName=IP:{ip}\n")
        _openssl(
            "x509", "-req", "-in", f"{ip}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", f"{ip}.ext", "-out", f"{ip}.pem", cwd=self.folder,
        )  # fmt: skip
        return self.folder / f"{ip}.pem", self.folder / f"{ip}.key"
