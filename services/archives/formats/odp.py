"""The Open Directory's RDF dumps (DMOZ: ``content.rdf.u8``, ``structure.rdf.u8``) to documents.

A ``<Topic r:id="Top/Arts/Movies">`` becomes a directory page at its DMOZ URL
(``http://www.dmoz.org/Arts/Movies/``): its title, description, and the titles and
descriptions of the sites it lists as text; its links are the listed sites (anchor:
the site's title, from the ``<ExternalPage>`` elements that follow the topic) and the
topics it points to (``<narrow>``, ``<symbolic>``, ``<related>``, ``<letterbar>``:
the directory's own link graph). An ``<ExternalPage about="URL">`` becomes a
document at its URL with its ``<d:Title>`` and ``<d:Description>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO
from urllib.parse import quote

from services.archives.formats.elements import Element, split
from services.archives.formats.warc import warc_date
from services.archives.records import ArchiveRecord, Document, Skip, damaged, skipped
from services.text.errors import BadUrlError
from services.text.urls import normalize_url

ELEMENTS = {b"<Topic": b"</Topic>", b"<ExternalPage": b"</ExternalPage>"}
TOPIC = b"<Topic"
DIRECTORY = "http://www.dmoz.org/"
_OPEN = (
    b'<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" '
    b'xmlns="http://dmoz.org/rdf/">'
)
_STRUCTURE = ("narrow", "narrow1", "narrow2", "symbolic", "symbolic1", "symbolic2", "related", "letterbar")


def topic_url(topic_id: str) -> str:
    """``Top/Arts/Movies`` -> ``http://www.dmoz.org/Arts/Movies/`` (the directory's own URLs)."""
    path = topic_id.strip().removeprefix("Top").strip("/")
    return normalize_url(DIRECTORY + (quote(path, safe="/:,()'!&+-_.~") + "/" if path else ""))


def _local(element: ET.Element) -> ET.Element:
    """Namespaces dropped from tags and attributes: ``r:id`` is ``id``, ``d:Title`` ``Title``."""
    for node in element.iter():
        node.tag = node.tag.rsplit("}", 1)[-1]
        node.attrib = {k.rsplit("}", 1)[-1]: v for k, v in node.attrib.items()}
    return element


@dataclass
class _Topic:
    offset: int
    id: str
    url: str
    title: str
    description: str
    when: float | None
    sites: list[str] = field(default_factory=list)
    structure: list[tuple[str, str]] = field(default_factory=list)
    listed: dict[str, tuple[str, str]] = field(default_factory=dict)  # site URL -> (title, description)


def read_odp(
    stream: IO[bytes], name: str, start: int, stop: int, *, cap: int, fetched_at: float, language: str = ""
) -> Iterator[ArchiveRecord]:
    """The topics (and the sites after them) that start in [start, stop) of an RDF dump."""
    topic: _Topic | None = None
    for element in split(stream, start, stop, ELEMENTS, cap):
        if element.data is None:
            if element.truncated:
                yield damaged(
                    name,
                    element.offset,
                    fetched_at,
                    Skip.TRUNCATED,
                    element.damage or "the dump ends inside an element",
                )
            else:
                yield skipped("", element.offset, fetched_at, Skip.TOO_LARGE, element.tag.decode()[1:])
            continue
        try:
            node = _local(ET.fromstring(_OPEN + element.data + b"</RDF>"))[0]
        except (ET.ParseError, IndexError) as exc:
            yield damaged(name, element.offset, fetched_at, Skip.CORRUPT, f"not well-formed XML ({exc})")
            continue
        if element.tag == TOPIC:
            if topic is not None:
                yield _topic_record(topic, fetched_at, language)
            topic = _read_topic(node, element)
            if topic is None:
                yield damaged(name, element.offset, fetched_at, Skip.CORRUPT, "<Topic> without a usable r:id")
            continue
        yield _page_record(node, element.offset, topic, fetched_at, language)
    if topic is not None:
        yield _topic_record(topic, fetched_at, language)


def _read_topic(node: ET.Element, element: Element) -> _Topic | None:
    topic_id = node.get("id", "")
    try:
        url = topic_url(topic_id)
    except BadUrlError:
        return None
    if not topic_id:
        return None
    title = (node.findtext("Title") or topic_id.rsplit("/", 1)[-1].replace("_", " ")).strip()
    topic = _Topic(
        element.offset,
        topic_id,
        url,
        title,
        (node.findtext("Description") or "").strip(),
        warc_date((node.findtext("lastUpdate") or "").replace(" ", "T")),
    )
    for child in node:
        target = child.get("resource", "")
        if not target:
            continue
        if child.tag in ("link", "link1"):
            topic.sites.append(target)
        elif child.tag in _STRUCTURE:
            label, colon, path = target.partition(":")
            path, label = (path, label) if colon and not label.startswith("Top") else (target, "")
            try:
                topic.structure.append((topic_url(path), label or path.rsplit("/", 1)[-1].replace("_", " ")))
            except BadUrlError:
                continue
    return topic


def _page_record(
    node: ET.Element, offset: int, topic: _Topic | None, default_time: float, language: str
) -> ArchiveRecord:
    about = node.get("about", "").strip()
    title = (node.findtext("Title") or "").strip()
    description = (node.findtext("Description") or "").strip()
    when = topic.when if topic is not None and topic.when else default_time
    try:
        url = normalize_url(about)
    except BadUrlError:
        return skipped(about, offset, when, Skip.CORRUPT, "external page without a usable URL")
    if topic is not None and (node.findtext("topic") or topic.id) == topic.id:
        topic.listed[about] = (title, description)
    if not title and not description:
        return skipped(url, offset, when, Skip.EMPTY, "external page")
    return ArchiveRecord(url, offset, when, document=Document(title, description, [], language, description))


def _topic_record(topic: _Topic, default_time: float, language: str) -> ArchiveRecord:
    links: dict[str, str] = {}
    lines = [" > ".join(topic.id.removeprefix("Top/").split("/")), topic.description]
    for site in topic.sites:
        title, description = topic.listed.get(site, ("", ""))
        try:
            links.setdefault(normalize_url(site), title)
        except BadUrlError:
            continue
        lines.append(f"{title}: {description}" if description else title)
    for url, label in topic.structure:
        links.setdefault(url, label)
    links.pop(topic.url, None)
    text = "\n".join(line for line in lines if line)
    document = Document(topic.title, text, list(links.items()), language, topic.description)
    return ArchiveRecord(topic.url, topic.offset, topic.when or default_time, document=document)
