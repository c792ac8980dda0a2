"""What a fetched document says: title, text, description, language hints and links from
HTML (``html``, ``links``, ``boilerplate``, ``titles``, ``robots_directives``), the
``charset`` of its bytes, text from PDF (``pdf``), and ``whitespace`` cleaning. Pure."""
