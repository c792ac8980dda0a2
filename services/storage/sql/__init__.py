"""The metadata database (SQLite embedded, MySQL/MariaDB on AWS): the tables (``models``),
opening it (``engines``), its schema and migrations (``schema``, ``migrate``,
``migrations/``), transient errors and retries (``retry``), and the small shared operations
on it (``counters``, ``doc_numbers``, ``index_versions``, ``bulk_sql``, ``round_trips``)."""
