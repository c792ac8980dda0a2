"""The admin API's request bodies and answers, as its OpenAPI schema shows them.

Bodies are typed here and checked by ``services.admin.operations`` (the CLI's checks): a
refused URL, host or reason is a 400 with the same message ``nimbus`` prints, not a
schema error. Answers are the operations' own records.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.admin.operations import (
    MAX_HOST_TEXT,
    MAX_HOSTS,
    MAX_REASON_CHARS,
    MAX_URLS,
    BlockedLine,
)
from services.crawler.cluster.heartbeat import NodeView
from services.indexing.builds import BuildView
from services.search.http.schemas import ErrorDetail
from services.text.urls import MAX_URL_LENGTH

SAID = {
    400: "refused input: the message names it and says what to give instead",
    401: "no admin token, or not this site's (Authorization: Bearer <NIMBUS_ADMIN_TOKEN>)",
    403: "a change asked with the dashboard's session cookie instead of the bearer token",
    413: "the body is larger than the admin API takes",
    429: "too many requests from this address (Retry-After says when to try again)",
    503: "the database is unavailable",
}


def errors(*statuses: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` for the errors an admin route may answer."""
    return {status: {"model": ErrorDetail, "description": SAID[status]} for status in statuses}


# The limits are shown in the schema (json_schema_extra) and enforced by ``operations``: a 400
# with the CLI's message, not pydantic's 422.
URLS: dict[str, Any] = {
    "minItems": 1,
    "maxItems": MAX_URLS,
    "items": {"type": "string", "maxLength": MAX_URL_LENGTH},
}
HOSTS: dict[str, Any] = {
    "minItems": 1,
    "maxItems": MAX_HOSTS,
    "items": {"type": "string", "maxLength": MAX_HOST_TEXT},
}


class SeedRequest(BaseModel):
    urls: list[str] = Field(
        description=f"absolute http(s) URLs, 1 to {MAX_URLS}",
        json_schema_extra=URLS,
    )
    recrawl: bool = Field(False, description="fetch URLs already known again, before every other")


class BlockRequest(BaseModel):
    hosts: list[str] = Field(
        description=f"host names (example.org) or URLs, 1 to {MAX_HOSTS}",
        json_schema_extra=HOSTS,
    )
    reason: str = Field(
        "",
        description="why, shown on the dashboard: one line, no control characters",
        json_schema_extra={"maxLength": MAX_REASON_CHARS},
    )
    purge: bool = Field(
        False,
        description="also take their stored pages (their subdomains' too) out of the index from its "
        "next update; a host blocked earlier is purged by blocking it again with this",
    )


class UnblockRequest(BaseModel):
    hosts: list[str] = Field(
        description=f"blocked host names, 1 to {MAX_HOSTS}",
        json_schema_extra=HOSTS,
    )


class BuildsResponse(BaseModel):
    builds: list[BuildView] = Field(description="newest first")


class HostLine(BaseModel):
    host: str
    waiting: int
    pages: int
    errors: int


class SlowHost(HostLine):
    delay: float = Field(description="seconds between requests to the host")


class Minute(BaseModel):
    start: float
    pages: int
    errors: int


class ArchiveCrawl(BaseModel):
    """One archive crawl: its bundle, its batches and what reading them counted."""

    id: int
    url: str
    type: str
    description: str
    state: str = Field(description="registered, running or finished")
    batches: int
    committed: int = Field(description="batches committed")
    records: int = Field(description="records read in committed batches")
    records_hint: int = Field(description="records found when the bundle was registered")
    bytes: int
    errors: int
    kinds: dict[str, int] = Field(description="records by kind: page, document, alias, skipped.*, error.*")
    damage: list[str] = Field(description="the first errors, each naming its file and byte offset")
    seconds: float
    eta_seconds: float | None = Field(description="seconds to the end at the rate so far (null: no rate yet)")


class StatusResponse(BaseModel):
    """The crawl cluster as the dashboard shows it."""

    now: float = Field(description="the server's clock (epoch seconds): beat ages are against it")
    nodes: list[NodeView] = Field(description="crawler processes from their heartbeats, newest first")
    running: int
    pages: int
    frontier: dict[str, int] = Field(description="frontier rows by state")
    counters: dict[str, int] = Field(description="the crawl's policy counters")
    paused: bool
    busiest_hosts: list[HostLine]
    slowest_hosts: list[SlowHost]
    minutes: list[Minute] = Field(description="pages and errors committed per minute, last hour")
    blocked_hosts: list[BlockedLine]
    archives: list[ArchiveCrawl] = Field(default=[], description="archive crawls, newest first")
