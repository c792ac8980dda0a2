"""Storage shared by the crawler, the MapReduce jobs and the search service.

blocks: content-block format; records: record blocks; blobstore: file:// and
s3:// backends; segment: index segments. The metadata database: models (the
tables), engines (opening it, SQLite's locking), schema (``init_db``) and migrate,
retry (transient errors), counters, doc_numbers, index_versions (the active
segment), bulk_sql and round_trips.
"""
