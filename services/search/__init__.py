"""The search service: load the active index segment, score, snippet, serve UI and API.

Where to look, by the question you bring:

- ``query/``: how a query is read (the query language, spelling help and completions).
- ``retrieval/``: which documents, in which order (the segment as search reads it, the
  operators that restrict results, BM25F scoring with PageRank and exact top-k, phrases,
  RM3 feedback, words as typed, duplicates, why a document ranked).
- ``display/``: what a result shows (snippets, a stored page made fit to show).
- ``instant/``: answers beside the results (the weather for a place the query names).
- ``http/``: the web face (the FastAPI app, one router per part of the site under
  ``routes/``, dependencies, error statuses, security headers, rate limits, ``/metrics``,
  the JSON API's models).

At the top, the use cases the routes call: ``service`` (a query in, ranked hits with
titles and snippets out), ``page_views`` (one document at a time: page info, cached
copies), ``hits`` (a page of hits read from the stores: rows, records, snippets; and a
document's record for the views), ``results`` (what they answer with), ``result_cache``,
``version_tables`` (the spelling vocabulary and documents' hosts read once per index
version) and ``errors``.
pyproject.toml's import-linter contract keeps the rooms in this order.
"""
