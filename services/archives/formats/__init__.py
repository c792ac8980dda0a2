"""One reader per archive format, each yielding ``ArchiveRecord``s from a byte range of one file."""
