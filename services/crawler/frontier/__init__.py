"""Which URL next: the frontier in the database and the order the crawl takes it in.

Every URL ever seen is a row (``entries``); rows are leased in numbered batches
(``leases``), whose ledger says which are out, acknowledged or committed (``ledger``);
a crawler process queues its leased URLs per host for politeness (``host_queues``);
path prefixes that answer mostly 404s wait behind live ones (``dead_prefixes``).
"""
