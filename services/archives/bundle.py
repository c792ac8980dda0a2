"""A bundle: ``bundle.toml`` and the archive files beside it, in a folder or under an s3:// prefix.

``bundle.toml`` needs two fields, ``type`` and ``description``; everything else has a
default, so a single dump with a two-line description file just works::

    type = "mediawiki"
    description = "French Wikipedia, 2026-11"

Optional, for every type: ``batch_size`` (records per batch, 500), ``language`` (the
archive's language when it does not say), ``filter_language`` (apply the crawl's
language filter: false, for an operator who indexes a wiki in another language wants
all of it). By type: ``namespaces`` and ``url_template`` (mediawiki: which namespaces,
[0] = articles; the page URL when the dump has no ``<siteinfo>``); ``start``, ``end``,
``title``, ``url_template`` (text: regular expressions cutting lines into records, a
regular expression whose first group is the title, the URL of a record);
``query``, ``database_url_env``, ``key_column``, ``url_column`` or ``url_template``,
``title_column``, ``text_column`` (sql: the credentials stay in the environment
variable named, never in the file). A field this file does not know, or one missing,
is an error naming the field and the file.

Files that have no ``bundle.toml`` beside them (the sample data the demo serves, a judged
collection's folder) are read as a bundle with ``bundle_of``, the fields given in code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from services.archives.errors import BundleError, SourceError
from services.archives.sources import Location, open_location

DESCRIPTION_FILE = "bundle.toml"
DEFAULT_BATCH_SIZE = 500


class ArchiveType(StrEnum):
    WARC = "warc"  # WARC and ARC files, mixed as they come
    ARC = "arc"
    MEDIAWIKI = "mediawiki"
    ODP = "odp"
    JSONL = "jsonl"
    TEXT = "text"
    SQL = "sql"


_COMMON = {"type", "description", "batch_size", "language", "filter_language"}
_BY_TYPE: dict[ArchiveType, set[str]] = {
    ArchiveType.WARC: set(),
    ArchiveType.ARC: set(),
    ArchiveType.MEDIAWIKI: {"namespaces", "url_template"},
    ArchiveType.ODP: set(),
    ArchiveType.JSONL: set(),
    ArchiveType.TEXT: {"start", "end", "title", "url_template"},
    ArchiveType.SQL: {
        "query",
        "database_url_env",
        "key_column",
        "url_column",
        "url_template",
        "title_column",
        "text_column",
    },
}
_REQUIRED: dict[ArchiveType, set[str]] = {ArchiveType.SQL: {"query", "database_url_env", "text_column"}}
# A multistream dump's index (enwiki-...-multistream-index.txt.bz2) is read with its dump.
_WIKI_INDEX = re.compile(r"index[^/]*\.txt(\.bz2)?$")


@dataclass(frozen=True)
class Bundle:
    location: Location
    type: ArchiveType
    description: str
    files: list[str]  # the archive files, sorted (bundle.toml and *.md left out)
    sha256: str  # of bundle.toml: registering the same bundle twice is recognized by it
    batch_size: int = DEFAULT_BATCH_SIZE
    language: str = ""
    filter_language: bool = False
    namespaces: tuple[int, ...] = (0,)
    indexes: dict[str, str] = field(default_factory=dict)  # mediawiki: dump -> its index file
    start: str = ""
    end: str = ""
    title: str = ""
    url_template: str = ""
    query: str = ""
    database_url_env: str = ""
    key_column: str = ""
    url_column: str = ""
    title_column: str = ""
    text_column: str = ""

    @property
    def url(self) -> str:
        return self.location.url

    @property
    def name(self) -> str:
        """The bundle's folder name: the collection host of its stable URLs."""
        return self.location.url.rstrip("/").rsplit("/", 1)[-1] or "archive"


def load_bundle(url: str, endpoint_url: str | None = None) -> Bundle:
    """Read a bundle's ``bundle.toml`` and list its files; ``BundleError`` for a bad description."""
    location = open_location(url, endpoint_url)
    where = location.describe(DESCRIPTION_FILE)
    try:
        raw = location.read_bytes(DESCRIPTION_FILE)
    except SourceError as exc:
        raise BundleError(f"{where}: cannot be read; a bundle needs one ({exc})") from exc
    try:
        spec = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BundleError(f"{where}: not valid TOML ({exc})") from exc
    return parse_bundle(spec, location, hashlib.sha256(raw).hexdigest(), where)


def bundle_of(
    url: str,
    archive_type: ArchiveType,
    files: Sequence[str],
    *,
    description: str = "",
    endpoint_url: str | None = None,
    **fields: Any,
) -> Bundle:
    """The named ``files`` of a folder or prefix that holds no ``bundle.toml``, as a bundle of
    ``archive_type``; ``fields`` are the ones a description file would hold, checked as
    ``load_bundle`` checks them."""
    location = open_location(url, endpoint_url)
    spec = {"type": archive_type.value, "description": description or f"{archive_type.value} files", **fields}
    where = f"{location.url} (a bundle without {DESCRIPTION_FILE})"
    sha256 = hashlib.sha256(repr(sorted(spec.items())).encode()).hexdigest()
    bundle = parse_bundle(spec, location, sha256, where)
    missing = [name for name in files if name not in bundle.files]
    if missing:
        raise BundleError(f"{location.describe(missing[0])}: no such {archive_type.value} file")
    indexes = {dump: index for dump, index in bundle.indexes.items() if dump in files}
    return dataclasses.replace(bundle, files=sorted(files), indexes=indexes)


def parse_bundle(spec: dict[str, Any], location: Location, sha256: str, where: str) -> Bundle:
    for name in ("type", "description"):
        if name not in spec:
            raise BundleError(
                f'{where}: missing field {name!r} (type = one of {_types()}, description = "...")'
            )
    kind = _str(spec, "type", where)
    try:
        archive_type = ArchiveType(kind)
    except ValueError:
        raise BundleError(f"{where}: field 'type' is {kind!r}; use one of {_types()}") from None
    allowed = _COMMON | _BY_TYPE[archive_type]
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise BundleError(
            f"{where}: unknown field {unknown[0]!r} for type {kind!r} (known: {', '.join(sorted(allowed))})"
        )
    missing = sorted(_REQUIRED.get(archive_type, set()) - set(spec))
    if missing:
        raise BundleError(f"{where}: missing field {missing[0]!r} (type {kind!r} needs it)")
    strings = {
        name: _str(spec, name, where)
        for name in allowed - {"type", "batch_size", "namespaces", "filter_language"}
        if name in spec
    }
    batch_size = spec.get("batch_size", DEFAULT_BATCH_SIZE)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise BundleError(f"{where}: field 'batch_size' must be a whole number of records, 1 or more")
    namespaces = spec.get("namespaces", [0])
    if (
        not isinstance(namespaces, list)
        or not namespaces
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in namespaces)
    ):
        raise BundleError(f"{where}: field 'namespaces' must be a list of namespace numbers, e.g. [0]")
    filter_language = spec.get("filter_language", False)
    if not isinstance(filter_language, bool):
        raise BundleError(f"{where}: field 'filter_language' must be true or false")
    for name in ("start", "end", "title"):
        if name in strings:
            try:
                re.compile(strings[name])
            except re.error as exc:
                raise BundleError(f"{where}: field {name!r} is not a regular expression ({exc})") from exc
    if archive_type == ArchiveType.SQL and "url_column" in strings and "url_template" in strings:
        raise BundleError(f"{where}: give 'url_column' or 'url_template', not both")
    files, indexes = _archive_files(location, archive_type)
    return Bundle(
        location=location,
        type=archive_type,
        description=strings["description"],
        files=files,
        sha256=sha256,
        batch_size=batch_size,
        filter_language=filter_language,
        namespaces=tuple(namespaces),
        indexes=indexes,
        **{k: v for k, v in strings.items() if k != "description"},
    )


def _archive_files(location: Location, archive_type: ArchiveType) -> tuple[list[str], dict[str, str]]:
    if archive_type == ArchiveType.SQL:
        return [], {}
    names = [n for n in location.names() if n != DESCRIPTION_FILE and not n.lower().endswith(".md")]
    if archive_type != ArchiveType.MEDIAWIKI:
        return names, {}
    index_files = [n for n in names if _WIKI_INDEX.search(n)]
    dumps = [n for n in names if n not in index_files]
    indexes = {}
    for dump in dumps:
        stem = dump.split(".xml")[0]
        # enwiki-...-multistream.xml.bz2 and enwiki-...-multistream-index.txt.bz2
        matches = [i for i in index_files if i.startswith(stem)]
        if matches:
            indexes[dump] = matches[0]
    return dumps, indexes


def _str(spec: dict[str, Any], name: str, where: str) -> str:
    value = spec[name]
    if not isinstance(value, str):
        raise BundleError(f"{where}: field {name!r} must be a string")
    return value


def _types() -> str:
    return ", ".join(t.value for t in ArchiveType)
