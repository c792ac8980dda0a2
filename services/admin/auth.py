"""Who may use the dashboard: one token, a signed session cookie, CSRF tokens. Pure functions.

The operator types ``NIMBUS_ADMIN_TOKEN`` once (compared in constant time); the browser
then holds a session cookie signed with a key derived from the token (HMAC-SHA256), so
rotating the token ends every session. Every form that changes state carries a CSRF token
bound to the session (the synchronizer-token pattern): a page on another site can make the
browser send the cookie (SameSite=Strict already refuses that in current browsers) but
cannot read the token to put in the form.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SESSION_COOKIE = "nimbus_admin"
SESSION_SECONDS = 12 * 3600


def _key(token: str, purpose: str) -> bytes:
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).digest()


def token_matches(given: str, token: str) -> bool:
    """Constant-time comparison; an unset token matches nothing."""
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


def new_session(token: str, now: float) -> str:
    """``<expiry>.<nonce>.<signature>``."""
    body = f"{int(now + SESSION_SECONDS)}.{secrets.token_hex(8)}"
    return f"{body}.{hmac.new(_key(token, 'session'), body.encode(), hashlib.sha256).hexdigest()}"


def session_valid(cookie: str | None, token: str, now: float) -> bool:
    if not cookie or not token or cookie.count(".") != 2:
        return False
    body, _, signature = cookie.rpartition(".")
    expected = hmac.new(_key(token, "session"), body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        return False
    expiry = body.split(".", 1)[0]
    return expiry.isdigit() and int(expiry) > now


def csrf_token(cookie: str, token: str) -> str:
    """The form token of a session."""
    return hmac.new(_key(token, "csrf"), cookie.encode(), hashlib.sha256).hexdigest()


def csrf_valid(given: str, cookie: str | None, token: str) -> bool:
    return bool(cookie) and hmac.compare_digest(given.encode(), csrf_token(cookie or "", token).encode())
