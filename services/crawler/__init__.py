"""The crawler: from a seed URL to stored documents, on one machine or a cluster.

Where to look, by the question you bring:

- ``web/``: fetching and reading one page (HTTP, content encodings, old servers,
  TLS, robots.txt, sitemaps, soft 404s, the parse into a record).
- ``frontier/``: which URL next (the frontier's rows, leases of numbered batches and
  their ledger, per-host back queues, dead path prefixes).
- ``commit/``: from fetched to stored (what a fetch hands on, the write-ahead spool,
  the committer, a cluster worker's flush and its acknowledgement manifest).
- ``cluster/``: roles across machines (heartbeats, the committer's election and
  ordered commit, host partitions, one live process per identity).
- ``archive/``: archive crawls (a bundle registered, its batches read and their records
  turned into the results a visit would give), leased and committed like URL batches.
- ``report/``: what a crawl tells its operator (the progress line, ``/metrics``, why
  nothing was fetched).

At the top, wiring the rooms: ``crawl`` (the coordinator's event loop), ``held_batches``
(the batches it holds: leased while memory allows, visited host by host or read on the
archive thread, handed to the committer in lease order), ``node`` (its heartbeat, the
operator's control, a cluster worker's live peers and partitions), ``visit`` (one URL's
visit), ``context`` (the seam between coordinator and visitor), ``outcome`` (what a fetch
means for the frontier: retries, redirects, recrawls), ``local_cluster`` (a whole cluster
as processes on one machine) and ``errors``. pyproject.toml's import-linter contract keeps
the rooms in this order.
"""
