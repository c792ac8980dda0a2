"""Answers beside the results: whether a query names a place (``places``, an offline
gazetteer) and that place's current weather (``weather``), never in the results' way."""
