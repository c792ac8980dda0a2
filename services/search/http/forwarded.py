"""Who the client is behind the load balancer: ``X-Forwarded-For``/``-Proto``, believed only
from the configured proxies (``NIMBUS_PROXY_CIDRS``: the load balancer's subnets when deployed).

The rate limit counts requests per client address, and the admin's session cookie is
``Secure`` when the request came over HTTPS: both read what this middleware leaves in the
ASGI scope. uvicorn's own proxy-headers handling is off (``nimbus serve``) because it takes
any string in the header as the client's address: from a trusted peer, ``X-Forwarded-For:
junk-1``, ``junk-2``, ... were that many clients, each with a fresh allowance. Here:

- a peer outside the proxies' networks is the client, whatever it sends;
- from a proxy, the header's addresses are read from the right (each proxy appends the
  address it was reached from) and the first one not itself a proxy is the client, as
  nginx's ``real_ip_recursive`` and Starlette's ``ProxyHeadersMiddleware`` read them;
- an entry that does not parse as an IP address ends the walk: the client is the last
  address that did (the peer, when the right-most entry is junk), never the junk.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = frozenset({"http", "https"})
MAX_HOPS = 32  # entries read from the right: a longer chain is someone's padding


def proxy_networks(text: str) -> tuple[Network, ...]:
    """``NIMBUS_PROXY_CIDRS`` (comma-separated CIDRs or addresses) as networks; ``ValueError``
    names the entry that is neither (``SearchSettings.validate`` turns it into a fix)."""
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if entry:
            networks.append(ipaddress.ip_network(entry, strict=False))
    return tuple(networks)


def _address(text: str) -> Address | None:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):  # "[2001:db8::1]", as some proxies write it
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address: Address, proxies: Sequence[Network]) -> bool:
    return any(address in network for network in proxies)


def client_address(peer: str, forwarded_for: Iterable[str], proxies: Sequence[Network]) -> str:
    """The client's address for a request from ``peer`` with these ``X-Forwarded-For`` header
    values (in order), believing only ``proxies``. Pure."""
    current = _address(peer)
    if current is None or not _trusted(current, proxies):
        return peer
    hops = [hop for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops[-MAX_HOPS:]):
        address = _address(hop)
        if address is None:
            break  # junk: the nearest address we could read stands
        current = address
        if not _trusted(address, proxies):
            break
    return str(current)


class ForwardedHeaders:
    """Pure ASGI middleware: the scope's ``client`` and ``scheme`` as the proxies forward them."""

    def __init__(self, app: ASGIApp, proxies: Sequence[Network]) -> None:
        self.app, self.proxies = app, tuple(proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and self.proxies and client:
            peer_address = _address(client[0])
            if peer_address is not None and _trusted(peer_address, self.proxies):
                forwarded = [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]
                protos = [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-proto"]
                scope = dict(scope)
                if forwarded:
                    scope["client"] = (client_address(client[0], forwarded, self.proxies), 0)
                proto = protos[-1].split(",")[-1].strip().lower() if protos else ""
                if proto in SCHEMES and scope["type"] == "http":
                    scope["scheme"] = proto
        await self.app(scope, receive, send)
