"""Who the client is behind a proxy: forwarded addresses believed from the proxies only, and
only when they are addresses."""

from __future__ import annotations

import pytest

from services.search.http.forwarded import client_address, proxy_networks

ALB = proxy_networks("10.40.0.0/20, 10.40.16.0/20")
PROXY = "10.40.3.7"


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),  # not a proxy: its header is not read
        (PROXY, ["198.51.100.1"], "198.51.100.1"),
        (PROXY, ["1.1.1.1, 198.51.100.1"], "198.51.100.1"),  # the left one is the client's claim
        (PROXY, ["1.1.1.1", "198.51.100.1"], "198.51.100.1"),  # two header lines: one list
        (PROXY, ["198.51.100.1, 10.40.17.2"], "198.51.100.1"),  # through two proxies
        (PROXY, ["10.40.0.9, 10.40.17.2"], "10.40.0.9"),  # proxies all the way: the farthest
        (PROXY, ["junk-1"], PROXY),  # junk is no client: the peer stands
        (PROXY, ["198.51.100.1, junk"], PROXY),
        (PROXY, ["junk, 10.40.17.2"], "10.40.17.2"),  # the nearest readable address
        (PROXY, [""], PROXY),
        (PROXY, ["unknown"], PROXY),
        (PROXY, ["198.51.100.1:4711"], PROXY),  # an address with a port is not an address here
        (PROXY, [" 2001:db8::7 "], "2001:db8::7"),
        (PROXY, ["[2001:db8::7]"], "2001:db8::7"),
        (PROXY, ["2001:DB8:0::7"], "2001:db8::7"),  # one client, one key, however written
        ("testclient", ["198.51.100.1"], "testclient"),  # a peer that is no address trusts nothing
    ],
)
def test_the_client_is_the_right_most_address_not_a_proxy(peer, forwarded, client) -> None:
    assert client_address(peer, forwarded, ALB) == client


def test_without_configured_proxies_no_header_is_believed() -> None:
    assert client_address("127.0.0.1", ["198.51.100.1"], ()) == "127.0.0.1"


def test_junk_cannot_mint_new_clients() -> None:
    """The rate-limit bypass: every request a fresh "client" from a trusted proxy."""
    assert {client_address(PROXY, [f"junk-{i}"], ALB) for i in range(100)} == {PROXY}


def test_proxy_networks_name_the_bad_entry() -> None:
    assert proxy_networks("") == ()
    with pytest.raises(ValueError, match="10.40.0.0/33"):
        proxy_networks("10.40.0.0/20,10.40.0.0/33")
