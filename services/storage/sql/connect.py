"""How a new MySQL connection gets its credentials and says why TLS failed.

Only engines whose URL names a secret (``services.aws_database``) or a CA
(``ssl_ca``) get the hook; a plain URL connects as SQLAlchemy does, with no
extra work. The hook runs once per new connection, never per transaction:
the pool hands out open connections without it.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import Dialect
from sqlalchemy.pool import ConnectionPoolEntry

from services.aws_database import CachedCredentials, Credentials

log = logging.getLogger(__name__)

ACCESS_DENIED = 1045  # MySQL's ER_ACCESS_DENIED_ERROR: a wrong user or password
TLS_FAILED = 2026  # MySQL's CR_SSL_CONNECTION_ERROR


def install_connect_hook(engine: Engine, credentials: CachedCredentials | None, tls_ca: str | None) -> None:
    """Each new connection of ``engine`` takes its user and password from ``credentials``
    (the secret read again, and one more try, when the server refuses them), and a failed TLS
    handshake names ``NIMBUS_DATABASE_TLS_CA``."""

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Dialect, _record: ConnectionPoolEntry, cargs: Any, cparams: Any) -> Any:
        dbapi = dialect.loaded_dbapi
        try:
            if credentials is None:
                return dbapi.connect(*cargs, **cparams)
            used = credentials.get()
            try:
                return dbapi.connect(*cargs, **_as(cparams, used))
            except dbapi.OperationalError as exc:
                if _code(exc) != ACCESS_DENIED:
                    raise
                fresh = credentials.after_refusal(used)
                if fresh is None:  # the secret still holds what was refused: a rotation under way
                    raise
                return dbapi.connect(*cargs, **_as(cparams, fresh))
        except dbapi.OperationalError as exc:
            cause = getattr(exc, "original_exception", None)
            if tls_ca and isinstance(cause, ssl.SSLError):
                raise dbapi.OperationalError(
                    TLS_FAILED,
                    f"TLS to the database failed ({cause}): NIMBUS_DATABASE_TLS_CA={tls_ca!r} must be the CA "
                    "bundle that signed the server's certificate, and the host name connected to must be "
                    "in it (RDS: the global bundle and the instance's endpoint name)",
                ) from exc
            raise


def _as(cparams: dict[str, Any], credentials: Credentials) -> dict[str, Any]:
    return {**cparams, "user": credentials.username, "password": credentials.password}


def _code(exc: BaseException) -> object:
    args = getattr(exc, "args", ())
    return args[0] if args else None
