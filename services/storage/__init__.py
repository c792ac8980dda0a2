"""Storage shared by the crawler, the MapReduce jobs and the search service.

blocks: content-block format; records: record blocks; blobstore: file:// and
s3:// backends; models/db: the metadata database; segment: index segments.
"""
