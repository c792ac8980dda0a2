"""From fetched to stored: how a batch of results becomes documents and frontier rows.

A visit's ``UrlResult`` (``results``) is appended to the local write-ahead spool
(``spool``) and buffered until a flush; the single-process ``committer`` writes content
and record blocks and commits rows in sequence order, sorting a flush's documents into
new ones, recrawls and copies of another URL's document (``duplicates``) and applying what
a recrawl changed or found gone (``recrawls``); a cluster's worker writes the
blocks itself and acknowledges its batches with a manifest (``worker_flush``,
``manifest``) for the elected committer (``cluster.ordered_commit``);
``finished_urls`` keeps links to finished URLs out of the inserts; ``purge`` is the
operator's commit without fetches, a blocked host's pages marked removed.
"""
