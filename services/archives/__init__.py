"""What an archive holds: web archives, wiki and directory dumps, collections, text, database rows.

Read by the crawler (workers process archive batches as if they had fetched the pages,
``nimbus eval``'s judged collections among them), by the demo and by the WARC export.
Where to look, by the question you bring:

- ``records``: what a reader yields (``ArchiveRecord``: a payload, an extracted document,
  an alias, or a skip with its reason and, for damage, the file and byte offset).
- ``bundle``: a bundle's ``bundle.toml`` and files (``load_bundle``).
- ``sources``: where the bytes are (a folder or ``s3://``, seekable either way).
- ``compression``: gzip members and decoded views of bz2/gzip from an offset.
- ``formats/``: one reader per format (``warc``, ``arc``, ``mediawiki`` with ``wikitext``,
  ``odp``, ``jsonl``, ``text``, ``sql``; ``framing``, ``http`` and ``elements`` are
  what they share).
- ``batches``: a bundle cut into batches at registration (``plan_batches``) and one batch
  read back (``read_batch``), through one module per family of files: ``web_archive_batches``
  (WARC and ARC, revisits resolved at registration), ``decoded_batches`` (dumps, JSON lines
  and text read through a decoded stream, multistream bz2 dumps by their index) and
  ``sql_batches`` (key ranges); ``batch``: what a batch is (``Batch``, ``TO_END``).
- ``export``: captures written as WARC 1.1 (``write_warc``).
- ``stored_export``: what was crawled (the documents table and the blob store) exported as
  WARC (``export_store``: ``nimbus archive export``).

pyproject.toml's import-linter contract keeps the rooms in this order.
"""
