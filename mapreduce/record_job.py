"""The base of jobs whose input is a manifest of record-block names.

Each input line names one record block in the blob store (the report's
"list of block names as input"), so a map task reads whole blocks with one
GET each and the number of map tasks scales with the number of blocks. The
store is named by passthrough options, never by environment variables: the
task sees exactly what the driver (``mapreduce.runner``) decided.
"""

from __future__ import annotations

from collections.abc import Iterator

from mrjob.job import MRJob
from mrjob.protocol import StandardJSONProtocol

from services.storage.blobstore import BlobStore, open_blobstore
from services.storage.records import Record, iter_records


class DuplicateDocumentError(ValueError):
    """One document occurs in two records: the manifest lists a stale or duplicated block."""


class RecordBlockJob(MRJob):
    # The standard json module everywhere: floats round-trip exactly
    # (ujson/rapidjson, which mrjob prefers when installed, may not).
    INTERNAL_PROTOCOL = StandardJSONProtocol
    OUTPUT_PROTOCOL = StandardJSONProtocol

    _store: BlobStore | None = None

    def configure_args(self) -> None:
        super().configure_args()
        self.add_passthru_arg("--blob-url", required=True,
                              help="blob store holding the record blocks (file://... or s3://...)")
        self.add_passthru_arg("--aws-endpoint-url", default=None,
                              help="S3-compatible endpoint (moto, MinIO); AWS when omitted")

    def store(self) -> BlobStore:
        if self._store is None:
            self._store = open_blobstore(self.options.blob_url, self.options.aws_endpoint_url)
        return self._store

    def block_records(self, line: str) -> Iterator[Record]:
        """Every record of the block an input line names (blank lines are skipped)."""
        name = line.strip()
        if not name:
            return
        self.increment_counter("blocks", "read")
        data = self.store().get(name)
        for record in iter_records(data, name=name):
            self.increment_counter("blocks", "records")
            yield record
