"""Archive files built byte by byte for the tests: WARC and ARC records (well-formed or not),
bundles in a folder. Hostile fixtures are made here, never tuned to the sample data."""

from __future__ import annotations

import base64
import gzip
import hashlib
from pathlib import Path

from services.archives.bundle import Bundle, load_bundle


def http_response(body: bytes, content_type: str = "text/html", status: int = 200, extra: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def warc_record(
    kind: str,
    uri: str,
    block: bytes,
    *,
    version: str = "1.0",
    date: str = "2020-01-02T03:04:05Z",
    length: int | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    fields = {
        "WARC-Type": kind,
        "WARC-Record-ID": f"<urn:uuid:{hashlib.md5((kind + uri + date).encode()).hexdigest()}>",
        "WARC-Date": date,
        "WARC-Target-URI": uri,
        "Content-Type": f"application/http; msgtype={kind}"
        if kind in ("response", "request", "revisit")
        else "text/plain",
        **(headers or {}),
        "Content-Length": str(len(block) if length is None else length),
    }
    head = f"WARC/{version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return head.encode() + block + b"\r\n\r\n"


def page(uri: str, html: str, **kwargs: object) -> bytes:
    body = html.encode()
    headers = {"WARC-Payload-Digest": digest(body), **kwargs.pop("headers", {})}  # type: ignore[dict-item]
    return warc_record("response", uri, http_response(body), headers=headers, **kwargs)  # type: ignore[arg-type]


def gz(*records: bytes) -> bytes:
    """Each record its own gzip member, as .warc.gz files are written."""
    return b"".join(gzip.compress(r, mtime=0) for r in records)


def arc_record(
    url: str, block: bytes, ip: str = "10.0.0.1", date: str = "20140216050221", ctype: str = "text/html"
) -> bytes:
    return f"{url} {ip} {date} {ctype} {len(block)}\n".encode() + block + b"\n"


def arc_file(*records: bytes) -> bytes:
    desc = b"1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n"
    return arc_record("filedesc://test.arc", desc, ip="0.0.0.0", ctype="text/plain") + b"".join(records)


def make_bundle(folder: Path, toml: str, files: dict[str, bytes | Path] | None = None) -> Bundle:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.toml").write_text(toml, encoding="utf-8")
    for name, content in (files or {}).items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.read_bytes())
    return load_bundle(str(folder))
