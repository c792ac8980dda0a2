"""Where bytes live: one blob store interface over file:// and s3:// (``blobstore``), and a
search instance's local copies of S3 blocks (``block_cache``)."""
