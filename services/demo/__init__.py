"""The offline demo: a loopback web rebuilt from ../shared/data, crawled, indexed and served."""
