"""Storage shared by the crawler, the MapReduce jobs and the search service.

Where to look, by the question you bring:

- ``blobs/``: where bytes live (``blobstore``: the file:// and s3:// backends behind one
  interface; ``block_cache``: S3 blocks kept whole on a search instance's disk).
- ``formats/``: how they are laid out (``blocks``: content blocks; ``records``: record
  blocks; ``block_pair``: the two written together; ``segment``: the index segment's
  array contract, checked at publish and at load).
- ``sql/``: the metadata database (``models``: the tables; ``engines``: opening it,
  SQLite's locking; ``schema`` and ``migrate`` with ``migrations/``; ``retry``: transient
  errors; ``counters``, ``doc_numbers``, ``index_versions``, ``bulk_sql``, ``round_trips``).

At the top, ``documents`` (``DocumentWriter``, the one writer of documents: numbers,
blocks and rows together) and ``errors``.
"""
