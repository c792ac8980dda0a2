"""The search service: load the active index segment, score, snippet, serve UI and API."""
