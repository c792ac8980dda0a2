"""Text shared by the crawler, the index jobs and the search service.

- ``urls``: URL identity (normalization as browsers and crawlers read links, ``url_id``,
  host keys), the one answer every stage must agree on.
- ``extract/``: what a fetched document says (HTML with ``html``, its ``links``, page
  furniture and link lists in ``boilerplate``, placeholder ``titles``, robots directives,
  the ``charset`` of its bytes, ``pdf`` text, ``whitespace``).
- ``analysis/``: the terms text gives (the one analyzer used at index and query time,
  ``analyze``, each language with its own stop list and stemmer, ``languages``; the word
  forms as typed, ``forms``; language identification, ``lang``; near-duplicate
  signatures, ``minhash``).
"""
