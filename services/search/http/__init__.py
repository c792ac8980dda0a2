"""The search service's web face: the FastAPI app (``app``), one router per part of the site
(``routes/``), what handlers get (``deps``), errors as HTTP statuses (``http_errors``),
security headers (``security``), HEAD (``head``), rate limits (``ratelimit``), ``/metrics``
(``metrics``) and the JSON API's models (``schemas``)."""
