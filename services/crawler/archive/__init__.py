"""Archive crawls: a bundle's records processed as if their pages had been fetched.

A bundle is registered once (``register``: its batches planned and written to the
ledger's queue, ``frontier.archive_batches``); any crawler process then leases its batches
under seqs of the same ledger as URL batches, reads one (``reading``) and turns each
record into the ``UrlResult`` a visit would have produced (``pages``), which the
committer (or a cluster's worker flush and ordered committer) stores as it stores
fetched pages. Nothing here knows how the batch reached it or how results are committed.
"""
