"""The offline demo: a loopback web rebuilt from the sample data (data/), crawled, indexed and served."""
