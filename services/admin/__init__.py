"""The operator's dashboard: the crawl cluster seen and steered from the web service."""
