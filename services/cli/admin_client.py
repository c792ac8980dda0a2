"""``nimbus crawl ... --remote URL`` and ``nimbus index now|status --remote URL``: the operator
commands through the site's admin API (``/admin/api/...``) with the admin token.

The answers are the records ``services.admin.operations`` returns locally, so each command
prints the same lines and exits with the same status as on a machine that reaches the
database (a refused URL or host: 2). The token goes only over HTTPS, verified against the
system's CAs, or over plain HTTP to a loopback address (``nimbus tunnel``'s end);
``--insecure-http`` is the explicit exception. Redirects are not followed (a redirect could
carry the token elsewhere, or to plain HTTP), and the token is in no message or log line.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from services.admin import operations
from services.admin.errors import OperatorInputError
from services.cli.parsing import UsageError
from services.cli.remote import RemoteCommand, RemoteError
from services.config import Settings

TIMEOUT_SECONDS = 30.0
TOKEN_HELP = (
    "set NIMBUS_ADMIN_TOKEN to the site's admin token (on AWS: aws secretsmanager get-secret-value "
    "--secret-id <AdminTokenSecretArn> --query SecretString --output text)"
)
NO_ADMIN_API = (
    "the site serves /admin only when NIMBUS_ADMIN_TOKEN is set on it, and a stack without a "
    "certificate answers 404 for /admin from the internet: run `nimbus tunnel` and give its "
    "http://127.0.0.1:PORT/ URL"
)


def api_base(url: str, insecure_http: bool = False) -> str:
    """The admin API's base URL (``https://site/admin/api/``) from the site's URL (its root or
    its /admin), or ``UsageError`` when the token would cross a network in clear."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UsageError(f"--remote {url!r}: give the site's URL, https://example.org/")
    if parts.username or parts.password:
        raise UsageError(
            "--remote: give the URL without a user name or password (the token is NIMBUS_ADMIN_TOKEN)"
        )
    if parts.scheme == "http" and not (insecure_http or is_loopback(parts.hostname)):
        raise UsageError(
            f"--remote {url}: refusing to send the admin token over plain HTTP to {parts.hostname}; give "
            "the site's https:// URL (or `nimbus tunnel` and its http://127.0.0.1 URL); --insecure-http "
            "sends it anyway"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/admin"):
        path = path[: -len("/admin")]
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/admin/api/", "", ""))


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


@dataclass
class AdminClient:
    """The admin API of one site, with the token as ``Authorization: Bearer``."""

    base: str  # api_base()
    token: str
    timeout: float = TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        host = urlsplit(self.base).hostname or ""
        handlers: list[urllib.request.BaseHandler] = [
            _NoRedirects(),
            urllib.request.HTTPSHandler(context=ssl.create_default_context()),
        ]
        if is_loopback(host):  # a proxy from the environment would see the token in clear
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        return self._call("GET", path + (f"?{urlencode(query)}" if query else ""), None)

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return self._call("POST", path, json.dumps(body or {}).encode())

    def _call(self, method: str, path: str, data: bytes | None) -> Any:
        url = self.base + path
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise _refusal(url, exc.code, exc.read(), exc.headers.get("Location")) from None
        except urllib.error.URLError as exc:
            raise _unreachable(url, exc.reason) from None
        except TimeoutError:
            raise RemoteError(f"no answer from {url} within {self.timeout:.0f} s") from None
        try:
            return json.loads(body)
        except ValueError:
            raise RemoteError(f"{url} answered something that is not JSON: is it the Nimbus site?") from None


def _detail(body: bytes) -> str:
    try:
        detail = json.loads(body).get("detail", "")
    except (ValueError, AttributeError):
        detail = body.decode("utf-8", "replace").strip()
    return (detail if isinstance(detail, str) else json.dumps(detail))[:500]


def _refusal(url: str, status: int, body: bytes, location: str | None) -> Exception:
    detail = _detail(body)
    if status == 400:
        return OperatorInputError(detail)  # the server's check, the same as the local command's
    if status == 401:
        return RemoteError(f"{url} refused the admin token (401): {TOKEN_HELP}")
    if status == 404:
        return RemoteError(f"no admin API at {url} (404): {NO_ADMIN_API}")
    if 300 <= status < 400:
        return RemoteError(
            f"{url} redirects to {location or 'another address'} ({status}): the token is not sent "
            "on; give --remote the final https:// URL"
        )
    return RemoteError(f"{url} answered {status}: {detail or 'no detail'}")


def _unreachable(url: str, reason: object) -> RemoteError:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return RemoteError(
            f"cannot verify the TLS certificate of {urlsplit(url).hostname} ({reason.verify_message}): give "
            "--remote the site's name that its certificate names, not the load balancer's DNS name"
        )
    if isinstance(reason, TimeoutError):
        return RemoteError(f"no answer from {url} within {TIMEOUT_SECONDS:.0f} s")
    return RemoteError(f"cannot reach the admin API at {url}: {reason}")


# ------------------------------------------------------------------ the commands
def _options(parser: argparse.ArgumentParser) -> None:
    remote = parser.add_argument_group("from a machine outside the stack's network")
    remote.add_argument(
        "--remote",
        metavar="URL",
        help="go through the admin API of the site at URL (https://...; default: NIMBUS_ADMIN_URL) "
        "with the token in NIMBUS_ADMIN_TOKEN, not the database",
    )
    remote.add_argument(
        "--insecure-http",
        action="store_true",
        help="allow a plain http:// URL that is not loopback (the token then crosses the network in clear)",
    )


def _wanted(args: argparse.Namespace, settings: Settings) -> bool:
    return bool(args.remote or settings.search.admin_url)


def client(args: argparse.Namespace, settings: Settings) -> AdminClient:
    base = api_base(args.remote or settings.search.admin_url, args.insecure_http)
    if not settings.search.admin_token:
        raise RemoteError(f"no admin token for {base}: {TOKEN_HELP}")
    return AdminClient(base, settings.search.admin_token)


def _say(lines: list[str]) -> int:
    for line in lines:
        print(line)
    sys.stdout.flush()
    return 0


def crawl_status(args: argparse.Namespace, settings: Settings) -> int:
    return _say(operations.CrawlStatus.from_json(client(args, settings).get("status")).lines())


def crawl_seed(args: argparse.Namespace, settings: Settings) -> int:
    """Through ``POST /admin/api/seed``, in batches of at most ``MAX_URLS``, every URL checked
    here first (the server checks again)."""
    from services.cli.crawl_commands import seed_words

    words = seed_words(args)
    operations.seed_batches(words)
    api = client(args, settings)
    results = [
        operations.from_json(
            operations.Seeded,
            api.post("seed", {"urls": words[at : at + operations.MAX_URLS], "recrawl": args.recrawl}),
        )
        for at in range(0, len(words), operations.MAX_URLS)
    ]
    return _say(operations.seeded_total(results).lines())


def crawl_signal(args: argparse.Namespace, settings: Settings) -> int:
    answer = client(args, settings).post(operations.crawl_command(args.action).value)
    return _say(operations.from_json(operations.Commanded, answer).lines())


def crawl_block(args: argparse.Namespace, settings: Settings) -> int:
    answer = client(args, settings).post(
        "block", {"hosts": args.hosts, "reason": args.reason, "purge": args.purge}
    )
    return _say(operations.from_json(operations.HostsChanged, answer).lines())


def crawl_unblock(args: argparse.Namespace, settings: Settings) -> int:
    answer = client(args, settings).post("unblock", {"hosts": args.hosts})
    return _say(operations.from_json(operations.HostsChanged, answer).lines())


def index_now(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.builds import BuildView
    from services.indexing.daemon import POLL

    build = operations.from_json(BuildView, client(args, settings).post("index"))
    return _say(build.asked_lines(POLL))


def index_status(args: argparse.Namespace, settings: Settings) -> int:
    from services.indexing.builds import BuildView, status_lines

    answer = client(args, settings).get("index", {"limit": str(getattr(args, "last", 10))})
    return _say(status_lines([operations.from_json(BuildView, b) for b in answer["builds"]], time.time()))


HINT = (
    "from a machine outside the stack's network, give --remote https://SITE/ (or set NIMBUS_ADMIN_URL) "
    "with NIMBUS_ADMIN_TOKEN: the command then goes through the site's admin API"
)


def _command(run: Any) -> RemoteCommand:
    return RemoteCommand(_options, _wanted, run, HINT)


COMMANDS = {
    "nimbus crawl status": _command(crawl_status),
    "nimbus crawl seed": _command(crawl_seed),
    "nimbus crawl pause": _command(crawl_signal),
    "nimbus crawl resume": _command(crawl_signal),
    "nimbus crawl stop": _command(crawl_signal),
    "nimbus crawl block": _command(crawl_block),
    "nimbus crawl unblock": _command(crawl_unblock),
    "nimbus index now": _command(index_now),
    "nimbus index status": _command(index_status),
}
