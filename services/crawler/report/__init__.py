"""What a crawl tells its operator: the live progress line and totals (``progress``),
the Prometheus ``/metrics`` of a crawler process (``metrics``), and, when nothing was
fetched, why (``diagnose``)."""
