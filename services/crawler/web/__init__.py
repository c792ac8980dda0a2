"""Fetching and reading one page: what a server answers and what the page says.

One request (``fetch``), bounded in time and size, through the crawl's one client session
(``client_session``), what it produced (``fetch_result``) and what the response said, its
body decoded and capped (``response``), with the ways real servers get HTTP wrong
(``content_encoding``, ``lenient_http``, ``tls``) and the ways it fails, of which some are
worth another attempt (``fetch_errors``); what a host allows (``robots``)
and lists (``sitemaps``); whether a 200 is really a "not found" (``soft404``); and the
bytes turned into a record with text, language and links (``parse``). Nothing here
knows about the frontier, commits or a cluster.
"""
