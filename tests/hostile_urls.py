"""URLs an operator or a page may give that no crawl can use, with what the refusal must name.

One list for every layer that takes a URL: the ground floor (``normalize_url``), the admin's
form and API, the CLI (``nimbus crawl seed``, ``nimbus crawl URL``) and the crawler's link
extraction. Each is ``(url, why)``: ``why`` is a word the error message must hold (the
message also names the URL). Each layer must refuse each one with its own clear answer
(400, exit status 2, a skipped and counted link), never a traceback.
"""

from __future__ import annotations

HOSTILE_URLS: list[tuple[str, str]] = [
    # IPv6 literals: brackets not closed, not opened, not an address, a zone, IPvFuture.
    ("http://[::1/", "IPv6"),
    ("http://[/", "IPv6"),
    ("http://a]/", "IPv6"),
    ("http://[zz]/", "IPv6"),
    ("http://[::1%25eth0]/", "IPv6"),
    ("http://[v1.fe80]/", "IPv6"),
    ("http://[1.2.3.4]/", "IPv6"),
    # Ports: out of range, negative, zero, not a number.
    ("http://a:99999/", "port"),
    ("http://a:-1/", "port"),
    ("http://a:0/", "port"),
    ("http://a:8x/", "port"),
    ("http://a:+80/", "port"),
    # No host, or not a host name.
    ("http:///x", "host"),
    ("http://", "host"),
    ("http://:80/", "host"),
    ("http://user@/", "host"),
    ("http://a..b/", "host"),
    ("http://.a/", "host"),
    ("http://" + "a" * 64 + ".org/", "host"),
    ("http://" + "a." * 130 + "org/", "host"),
    ("http://1.2.3.999/", "host"),
    ("http://a%/", "host"),
    ("http://a%00b.org/", "host"),
    # Control characters and spaces in the host.
    ("http://a\x00b.org/", "host"),
    ("http://a\x01.org/", "host"),
    ("http://a\x7f.org/", "host"),
    ("http://a\u00a0b.org/", "host"),
    ("http://a<b>.org/", "host"),
    # Too long (a trap, or junk).
    ("http://x.org/" + "a" * 3000, "longer than"),
    ("http://x.org/?" + "q=1&" * 1000, "longer than"),
    # Not http(s).
    ("ftp://x.org/", "http(s)"),
    ("javascript:alert(1)", "http(s)"),
    ("file:///etc/passwd", "http(s)"),
    ("data:text/html,<b>x</b>", "http(s)"),
    ("mailto:a@b.org", "http(s)"),
    ("x.org/page", "http(s)"),
    ("//x.org/", "http(s)"),
    ("", "http(s)"),
    # IDNA: an empty or undecodable A-label, one that decodes to a control character or to
    # plain ASCII, a name the IDNA codec refuses.
    ("http://xn--/", "IDNA"),
    ("http://xn--zz-zz.org/", "IDNA"),
    ("http://xn--a.org/", "IDNA"),
    ("http://xn--abc-.org/", "IDNA"),
    ("http://a.\u3002b.org/", "host"),
    ("http://\ufdd0.org/", "host"),
]

# Look hostile, are fine: what the checks must keep accepting, in normal form.
GOOD_URLS: list[tuple[str, str]] = [
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("HTTP://[2001:DB8::1]/", "http://[2001:db8::1]/"),
    ("http://127.0.0.1:65535/", "http://127.0.0.1:65535/"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"),
    ("http://my_host.example.org/", "http://my_host.example.org/"),
    ("http://ex%41mple.org/", "http://example.org/"),
    ("http://user:pw@example.org/", "http://example.org/"),
    ("http://example.org/a\x01b", "http://example.org/a%01b"),
    ("http://example.org:80/", "http://example.org/"),
]
