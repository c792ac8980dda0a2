"""TLS as a crawler needs it: reach the site, as Nutch and Heritrix do, unless asked to verify.

A search engine reads public pages; a certificate that expired in 2019, names another
host or is self-signed is common on old sites and says nothing about the page. Nutch
(``http.tls.certificates.check``, off by default) and Heritrix (trust level "open" by
default) fetch such pages, and both still speak the TLS 1.0 of servers nobody
upgraded, which OpenSSL 3's defaults refuse. ``NIMBUS_VERIFY_TLS=true`` verifies
certificates and keeps OpenSSL's defaults; a failure is then the ``tls`` error kind,
which is not retried (a certificate does not heal in minutes).
"""

from __future__ import annotations

import ssl
import warnings


def crawler_tls(verify: bool) -> ssl.SSLContext:
    """The TLS context of a crawl: verifying with the system's roots, or reaching any server
    (without loading the roots it would not use, which every crawler process's start would
    pay: docs/performance-notes.md)."""
    if verify:
        return ssl.create_default_context()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():  # TLSv1 is deprecated: that is the servers this is for
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1
    context.set_ciphers("DEFAULT:@SECLEVEL=0")  # old servers' short keys and SHA-1 signatures
    return context
