"""Ingest: documents that were not crawled (judged test collections) into the
same blocks and documents table the crawler's committer writes, so the normal
index build and search code see them as if they had been fetched."""
