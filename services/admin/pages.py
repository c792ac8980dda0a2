"""``/admin``: the dashboard's page, its sign-in and its forms.

Pages without a valid session answer 401 with a login form. Every form that changes state
(pause, resume, stop, seeds, block, unblock, and signing out) needs the session and its
CSRF token, else 403, and acts through ``services.admin.operations``, as ``nimbus crawl
...`` does, so it reaches crawlers on every machine. A refused URL or host answers 400
with the CLI's message, a form over ``MAX_FORM_BYTES`` 413 saying how to seed more; each
as a page (``app._refused``), the input in it escaped.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from services.admin import auth, operations
from services.admin.deps import AdminDep, AdminState
from services.admin.errors import FormTooLargeError, OperatorInputError
from services.admin.status import ClusterStatus, cluster_status

MAX_FORM_BYTES = 64 * 1024
FORBIDDEN = "forbidden: sign in, and use the dashboard's own forms"
FORM_TOO_LARGE = (
    f"the form is larger than {MAX_FORM_BYTES // 1024} KB: add seeds here a few hundred at a "
    f"time, or seed more with `nimbus crawl seed --file FILE` (up to {operations.MAX_URLS} URLs "
    "a request through the admin API, POST /admin/api/seed)"
)
COMMANDS = {c.value for c in operations.CrawlCommand}

router = APIRouter(prefix="/admin", include_in_schema=False)


def _templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


def _login_page(request: Request, message: str = "") -> Response:
    return _templates(request).TemplateResponse(
        request, "admin_login.html", {"message": message}, status_code=401
    )


async def _form(request: Request) -> dict[str, str]:
    """The form's fields; ``FormTooLargeError`` (413) past ``MAX_FORM_BYTES``, never an empty
    form that then fails its CSRF check (a misleading 403)."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise FormTooLargeError(FORM_TOO_LARGE)
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def _forbidden() -> OperatorInputError:
    """403 as a page (``app._refused``): not signed in, or not the dashboard's own form."""
    return OperatorInputError(FORBIDDEN, status=403)


def _allowed(admin: AdminState, request: Request, fields: dict[str, str]) -> bool:
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    return admin.signed_in(request) and auth.csrf_valid(fields.get("csrf", ""), cookie, admin.token)


def _back() -> Response:
    return RedirectResponse("/admin", status_code=303)


@router.get("", response_class=HTMLResponse)
async def dashboard(request: Request, admin: AdminDep) -> Response:
    if not admin.signed_in(request):
        return _login_page(request)

    def read() -> ClusterStatus:
        with admin.sessions()() as session:
            return cluster_status(session, time.time(), admin.settings.crawl.heartbeat_seconds)

    status = await run_in_threadpool(read)
    cookie = request.cookies.get(auth.SESSION_COOKIE, "")
    return _templates(request).TemplateResponse(
        request,
        "admin.html",
        {"status": status, "csrf": auth.csrf_token(cookie, admin.token), "now": time.time()},
    )


@router.post("/login")
async def login(request: Request, admin: AdminDep) -> Response:
    fields = await _form(request)
    if not auth.token_matches(fields.get("token", ""), admin.token):
        return _login_page(request, "That is not the admin token.")
    response = _back()
    response.set_cookie(
        auth.SESSION_COOKIE,
        auth.new_session(admin.token, time.time()),
        max_age=auth.SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/admin",
    )
    return response


@router.post("/logout")
async def logout(request: Request, admin: AdminDep) -> Response:
    """Signs out with the CSRF token, as every form that changes state: another site cannot
    end the operator's session. Without a session there is nothing to protect: the cookie
    goes all the same."""
    fields = await _form(request)
    if admin.signed_in(request) and not _allowed(admin, request, fields):
        raise _forbidden()
    response = _back()
    response.delete_cookie(auth.SESSION_COOKIE, path="/admin")
    return response


@router.post("/command")
async def command(request: Request, admin: AdminDep) -> Response:
    fields = await _form(request)
    action = fields.get("action", "")
    if not _allowed(admin, request, fields) or action not in COMMANDS:
        raise _forbidden()

    def act() -> None:
        with admin.sessions().begin() as session:
            operations.command(session, operations.CrawlCommand(action), time.time())

    await run_in_threadpool(act)
    return _back()


@router.post("/seed")
async def seed(request: Request, admin: AdminDep) -> Response:
    fields = await _form(request)
    if not _allowed(admin, request, fields):
        raise _forbidden()
    urls = operations.seed_urls(fields.get("urls", "").split())
    partitions = admin.settings.crawl.partitions

    def add() -> None:
        with admin.sessions().begin() as session:
            operations.seed(
                session, urls, recrawl=bool(fields.get("recrawl")), now=time.time(), partitions=partitions
            )

    await run_in_threadpool(add)
    return _back()


@router.post("/block")
async def block(request: Request, admin: AdminDep) -> Response:
    fields = await _form(request)
    action = fields.get("action", "block")
    if not _allowed(admin, request, fields) or action not in ("block", "unblock"):
        raise _forbidden()
    hosts = operations.host_names(fields.get("hosts", "").split())
    reason = operations.block_reason(fields.get("reason", ""))

    def act() -> None:
        with admin.sessions().begin() as session:
            if action == "block":
                operations.block(session, hosts, reason, time.time(), purge=bool(fields.get("purge")))
            else:
                operations.unblock(session, hosts)

    await run_in_threadpool(act)
    return _back()
