"""What the admin routes get from the app, and who may call them, as FastAPI dependencies.

``install_admin`` keeps one ``AdminState`` on ``app.state.admin``; a route names it by type
(``admin: AdminDep``). Who may do what:

- the dashboard's pages and forms: the signed session cookie, and on every form that changes
  state its CSRF token (``pages``);
- the JSON API's reads (``GET /admin/api/...``): the admin token as ``Authorization: Bearer``
  (compared in constant time), or the dashboard's session;
- the JSON API's changes (``POST /admin/api/...``): the bearer token only. A cookie is sent
  by the browser on its own, a header is not: a page on another site can make a browser
  post with the session cookie but cannot set the header, so a change made with a bearer
  token needs no CSRF token, and a change made with the cookie alone is refused (403).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.admin import auth
from services.config import Settings
from services.storage.sql.schema import init_db

TOKEN_REQUIRED = "admin token required: send Authorization: Bearer <NIMBUS_ADMIN_TOKEN>"
COOKIE_REFUSED = (
    "the admin API's changes need Authorization: Bearer <NIMBUS_ADMIN_TOKEN>; "
    "the dashboard's session acts only through its own forms"
)


@dataclass
class AdminState:
    settings: Settings
    token: str
    engine: Engine
    factory: sessionmaker[Session]
    _ready: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sessions(self) -> sessionmaker[Session]:
        """Sessions on the crawl's database, its tables made before the first use (a fresh stack)."""
        if not self._ready:
            with self._lock:
                if not self._ready:
                    init_db(self.engine)
                    self._ready = True
        return self.factory

    def signed_in(self, request: Request) -> bool:
        return auth.session_valid(request.cookies.get(auth.SESSION_COOKIE), self.token, time.time())


async def get_admin(request: Request) -> AdminState:
    admin: AdminState = request.app.state.admin
    return admin


AdminDep = Annotated[AdminState, Depends(get_admin)]

# auto_error off: a missing or non-bearer header is our 401 (with our message), not FastAPI's 403.
bearer = HTTPBearer(
    auto_error=False,
    scheme_name="AdminToken",
    description="The admin token (NIMBUS_ADMIN_TOKEN; on AWS the stack's AdminTokenSecret).",
)
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def _token_given(admin: AdminState, credentials: HTTPAuthorizationCredentials | None) -> bool:
    return credentials is not None and auth.token_matches(credentials.credentials, admin.token)


def _unauthorized() -> HTTPException:
    return HTTPException(401, TOKEN_REQUIRED, headers={"WWW-Authenticate": "Bearer"})


async def may_read(request: Request, admin: AdminDep, credentials: BearerDep) -> None:
    """The bearer token or the dashboard's session, else 401."""
    if not (_token_given(admin, credentials) or admin.signed_in(request)):
        raise _unauthorized()


async def may_change(request: Request, admin: AdminDep, credentials: BearerDep) -> None:
    """The bearer token, else 403 with a session (use the forms) and 401 without."""
    if _token_given(admin, credentials):
        return
    if credentials is None and admin.signed_in(request):
        raise HTTPException(403, COOKIE_REFUSED)
    raise _unauthorized()
