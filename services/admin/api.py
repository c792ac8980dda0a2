"""``/admin/api/...``: the operator's commands as JSON over HTTPS, for ``nimbus ... --remote``.

Every change is one of ``services.admin.operations``, the functions the CLI's local commands
call, in one transaction; reads take the bearer token or the dashboard's session, changes
the bearer token only (``deps``). A refused URL, host or reason answers 400 with the
message ``nimbus`` prints locally.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from services.admin import operations
from services.admin.deps import AdminDep, may_change, may_read
from services.admin.operations import Commanded, CrawlCommand, HostsChanged, Seeded
from services.admin.schemas import (
    BlockRequest,
    BuildsResponse,
    SeedRequest,
    StatusResponse,
    UnblockRequest,
    errors,
)
from services.admin.status import cluster_status
from services.crawler.frontier import archive_batches
from services.indexing import builds
from services.indexing.builds import BuildView

# Who the API records as having asked for a build (index_builds.requested_by).
REQUESTED_BY = "admin"

reads = APIRouter(
    prefix="/admin/api", tags=["admin"], dependencies=[Depends(may_read)], responses=errors(401, 429, 503)
)
changes = APIRouter(
    prefix="/admin/api",
    tags=["admin"],
    dependencies=[Depends(may_change)],
    responses=errors(401, 403, 413, 429, 503),
)


@reads.get("/status", response_model=StatusResponse, summary="the crawl cluster's status")
def status(admin: AdminDep) -> JSONResponse:
    """Nodes (from their heartbeats; dead ones marked), the frontier by state, the policy
    counters, the busiest and slowest hosts, the last hour per minute, the blocked hosts."""
    now = time.time()
    with admin.sessions()() as session:
        found = cluster_status(session, now, admin.settings.crawl.heartbeat_seconds)
    return JSONResponse(
        {
            "now": now,
            "nodes": [n.__dict__ for n in found.nodes],
            "running": found.running,
            "pages": found.pages,
            "frontier": found.frontier,
            "counters": found.counters,
            "paused": found.paused,
            "busiest_hosts": [h.__dict__ for h in found.busiest],
            "slowest_hosts": [h.__dict__ for h in found.slowest],
            "minutes": [m.__dict__ for m in found.minutes],
            "blocked_hosts": [b.__dict__ for b in found.blocked],
            "archives": [archive_batches.to_json(a) for a in found.archives],
        }
    )


@changes.post("/seed", response_model=Seeded, responses=errors(400), summary="add URLs to the frontier")
def seed(admin: AdminDep, body: SeedRequest) -> Seeded:
    """What ``nimbus crawl seed [--recrawl] URL...`` does: the URLs into the frontier at the
    seeds' priority, for the running (or next) crawlers to fetch."""
    urls = operations.seed_urls(body.urls)
    with admin.sessions().begin() as session:
        return operations.seed(
            session, urls, recrawl=body.recrawl, now=time.time(), partitions=admin.settings.crawl.partitions
        )


def _command(what: CrawlCommand) -> None:
    @changes.post(
        f"/{what.value}",
        response_model=Commanded,
        name=what.value,
        summary=f"ask every crawler to {what.value}",
        description=f"What `nimbus crawl {what.value}` does: every crawler, on any machine, reads it "
        "at its next heartbeat.",
    )
    def act(admin: AdminDep) -> Commanded:
        with admin.sessions().begin() as session:
            return operations.command(session, what, time.time())


for _what in CrawlCommand:
    _command(_what)


@changes.post(
    "/block", response_model=HostsChanged, responses=errors(400), summary="take hosts out of every crawl"
)
def block(admin: AdminDep, body: BlockRequest) -> HostsChanged:
    """What ``nimbus crawl block [--reason R] [--purge] HOST...`` does: the hosts and their
    subdomains leave every crawl from each crawler's next heartbeat; with ``purge`` their stored
    pages leave the index from its next update."""
    hosts = operations.host_names(body.hosts)
    reason = operations.block_reason(body.reason)
    with admin.sessions().begin() as session:
        return operations.block(session, hosts, reason, time.time(), purge=body.purge)


@changes.post(
    "/unblock", response_model=HostsChanged, responses=errors(400), summary="let blocked hosts back"
)
def unblock(admin: AdminDep, body: UnblockRequest) -> HostsChanged:
    """What ``nimbus crawl unblock HOST...`` does."""
    hosts = operations.host_names(body.hosts)
    with admin.sessions().begin() as session:
        return operations.unblock(session, hosts)


@changes.post("/index", response_model=BuildView, status_code=202, summary="ask the indexer for a build now")
def index_now(admin: AdminDep) -> BuildView:
    """What ``nimbus index now`` does: a ``requested`` build the indexer takes when it next
    looks (oldest first). 202: asked, not built; ``GET /admin/api/index`` follows it."""
    with admin.sessions().begin() as session:
        return builds.request_build(session, REQUESTED_BY, time.time())


@reads.get("/index", response_model=BuildsResponse, summary="the recent index builds")
def index_status(
    admin: AdminDep,
    limit: Annotated[
        int, Query(ge=1, le=100, description="how many, newest first")
    ] = operations.RECENT_BUILDS,
) -> BuildsResponse:
    """What ``nimbus index status`` prints: the recent builds, asked for, running or ended."""
    with admin.sessions()() as session:
        return BuildsResponse(builds=builds.recent_builds(session, limit))
