"""Text processing shared by the crawler, the index jobs and the search service:
URL identity (normalization, urlId, host keys), HTML and PDF extraction, language
identification, and the one analyzer used at index and at query time."""
