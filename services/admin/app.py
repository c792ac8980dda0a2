"""``/admin``: the crawl cluster seen and steered from the web service, behind a token.

Off unless ``NIMBUS_ADMIN_TOKEN`` is set (then every /admin URL is 404). Pages without a
valid session answer 401 with a login form; the JSON API (``/admin/api/status``) wants
``Authorization: Bearer <token>`` or the session, else 401. Every form that changes state
(pause, resume, stop, add seeds) needs the session and its CSRF token, else 403, and acts
through the database like ``nimbus crawl pause`` does, so it reaches crawlers on every
machine. This module wires the search app and the crawler's tables: it sits above both.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from services.admin import auth
from services.admin.status import ClusterStatus, cluster_status
from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.frontier import entries
from services.search.http.app import create_app as create_search_app
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.schema import init_db
from services.text.errors import BadUrlError
from services.text.urls import normalize_url
from services.webui import build_templates

MAX_FORM_BYTES = 64 * 1024


def create_app(settings: Settings, recheck_seconds: float = 2.0) -> FastAPI:
    """The search app with the dashboard mounted (what ``nimbus serve`` runs)."""
    app = create_search_app(settings, recheck_seconds=recheck_seconds)
    install_admin(app, settings)
    return app


def create_app_from_env() -> FastAPI:
    """One uvicorn worker's app (``nimbus serve --workers N``)."""
    from services.aws_database import resolve_database_url

    return create_app(resolve_database_url(Settings.from_env()))


def install_admin(app: FastAPI, settings: Settings) -> None:
    token = settings.search.admin_token
    if not token:  # without a token the dashboard does not exist (404 everywhere under /admin)
        return
    templates = build_templates()
    engine = make_engine(settings.database_url)
    sessions: sessionmaker[Session] = session_factory(engine)
    migrated: list[bool] = []
    router = APIRouter(prefix="/admin", include_in_schema=False)

    def db() -> sessionmaker[Session]:
        if not migrated:  # the crawler tables exist before the first read (a fresh stack)
            init_db(engine)
            migrated.append(True)
        return sessions

    def read_status() -> ClusterStatus:
        with db()() as session:
            return cluster_status(session, time.time(), settings.crawl.heartbeat_seconds)

    def signed_in(request: Request) -> bool:
        return auth.session_valid(request.cookies.get(auth.SESSION_COOKIE), token, time.time())

    def login_page(request: Request, message: str = "") -> Response:
        return templates.TemplateResponse(request, "admin_login.html", {"message": message}, status_code=401)

    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return {}
        return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}

    def allowed(request: Request, fields: dict[str, str]) -> bool:
        cookie = request.cookies.get(auth.SESSION_COOKIE)
        return signed_in(request) and auth.csrf_valid(fields.get("csrf", ""), cookie, token)

    @router.get("", response_class=HTMLResponse)
    async def dashboard(request: Request) -> Response:
        if not signed_in(request):
            return login_page(request)
        status = await run_in_threadpool(read_status)
        cookie = request.cookies.get(auth.SESSION_COOKIE, "")
        return templates.TemplateResponse(
            request,
            "admin.html",
            {"status": status, "csrf": auth.csrf_token(cookie, token), "now": time.time()},
        )

    @router.post("/login")
    async def login(request: Request) -> Response:
        fields = await form(request)
        if not auth.token_matches(fields.get("token", ""), token):
            return login_page(request, "That is not the admin token.")
        response = RedirectResponse("/admin", status_code=303)
        response.set_cookie(
            auth.SESSION_COOKIE,
            auth.new_session(token, time.time()),
            max_age=auth.SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/admin",
        )
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        response = RedirectResponse("/admin", status_code=303)
        response.delete_cookie(auth.SESSION_COOKIE, path="/admin")
        return response

    @router.post("/command")
    async def command(request: Request) -> Response:
        fields = await form(request)
        action = fields.get("action", "")
        if not allowed(request, fields) or action not in ("pause", "resume", "stop"):
            return Response("forbidden: sign in, and use the dashboard's own forms", status_code=403)

        def act() -> None:
            with db().begin() as session:
                heartbeat.command(session, action, time.time())

        await run_in_threadpool(act)
        return RedirectResponse("/admin", status_code=303)

    @router.post("/seed")
    async def seed(request: Request) -> Response:
        fields = await form(request)
        if not allowed(request, fields):
            return Response("forbidden: sign in, and use the dashboard's own forms", status_code=403)
        try:
            urls = [normalize_url(u) for u in fields.get("urls", "").split()]
        except BadUrlError as exc:
            return Response(f"bad seed: {exc}; give absolute http(s) URLs", status_code=400)

        def add() -> None:
            with db().begin() as session:
                if fields.get("recrawl"):  # known ones fetched again, first
                    entries.recrawl_now(session, urls)
                seeds = [entries.NewUrl(u, 0, entries.SEED_PRIORITY) for u in urls]
                entries.add_urls(session, seeds, time.time(), partitions=settings.crawl.partitions)

        await run_in_threadpool(add)
        return RedirectResponse("/admin", status_code=303)

    @router.post("/block")
    async def block(request: Request) -> Response:
        fields = await form(request)
        action = fields.get("action", "block")
        if not allowed(request, fields) or action not in ("block", "unblock"):
            return Response("forbidden: sign in, and use the dashboard's own forms", status_code=403)
        hosts = fields.get("hosts", "").split()
        if not hosts:
            return Response("give one or more host names (example.org)", status_code=400)

        def act() -> None:
            with db().begin() as session:
                if action == "block":
                    heartbeat.block_hosts(session, hosts, time.time(), fields.get("reason", "").strip())
                else:
                    heartbeat.unblock_hosts(session, hosts)

        try:
            await run_in_threadpool(act)
        except BadUrlError as exc:
            return Response(str(exc), status_code=400)
        return RedirectResponse("/admin", status_code=303)

    @router.get("/api/status")
    async def api_status(request: Request) -> Response:
        bearer = request.headers.get("authorization", "")
        given = bearer[len("Bearer ") :] if bearer.startswith("Bearer ") else ""
        if not (auth.token_matches(given, token) or signed_in(request)):
            return JSONResponse({"detail": "admin token required"}, status_code=401)
        status = await run_in_threadpool(read_status)
        return JSONResponse(
            {
                "nodes": [n.__dict__ for n in status.nodes],
                "running": status.running,
                "pages": status.pages,
                "frontier": status.frontier,
                "counters": status.counters,
                "paused": status.paused,
                "busiest_hosts": [h.__dict__ for h in status.busiest],
                "slowest_hosts": [h.__dict__ for h in status.slowest],
                "minutes": [m.__dict__ for m in status.minutes],
                "blocked_hosts": [b.__dict__ for b in status.blocked],
            }
        )

    app.include_router(router)
