"""HTTPS as old sites serve it: self-signed or expired certificates, TLS 1.0 only."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from services.crawler.web.client_session import make_session
from services.crawler.web.fetch import fetch
from services.crawler.web.fetch_result import FetchResult

BODY = b"<html><body>a page behind an old certificate</body></html>"


def _expired_self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for localhost, signed by itself, that expired a year ago."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=800))
        .not_valid_after(now - datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(BODY)))
        if self.path == "/twice":  # a header aiohttp refuses: the http.client path, over TLS
            self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@pytest.fixture(params=["modern", "tls1.0"])
def https_site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    cert, key = _expired_self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if request.param == "tls1.0":  # a server nobody upgraded
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _fetch(url: str, *, verify_tls: bool) -> FetchResult:
    async def go() -> FetchResult:
        async with make_session("TestBot/1.0", 5.0, 2, verify_tls=verify_tls) as session:
            return await fetch(session, url, max_bytes=100_000)

    return asyncio.run(go())


def test_an_old_certificate_does_not_hide_the_page(https_site: str) -> None:
    for path in ("/", "/twice"):
        page = _fetch(https_site + path, verify_tls=False)
        assert (page.status, page.error, page.body) == (200, None, BODY), path


def test_verifying_certificates_refuses_them_once_not_again_and_again(https_site: str) -> None:
    refused = _fetch(https_site + "/", verify_tls=True)
    assert (refused.status, refused.error, refused.retryable, refused.body) == (None, "tls", False, b"")
    assert "NIMBUS_VERIFY_TLS" in refused.detail
