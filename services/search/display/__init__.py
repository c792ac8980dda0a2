"""What a result shows: the snippet that best says why it matched (``snippets``), and a
stored page made fit to show as a cached copy (``cached_copy``)."""
