"""Roles across machines: how crawler processes share one database and one bucket.

Every process beats (``heartbeat``); hosts hash into partitions shared out among the
live workers (``partitions``); committers elect one of them through a lease row
(``election``), which commits the workers' acknowledged batches strictly in sequence
order (``ordered_commit``) in its loop (``committer_role``); a lock file keeps one live
process per identity on a machine (``identity_lock``).
"""
