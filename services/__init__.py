"""Nimbus Search, in layers (docs/architecture.md; the contract in pyproject.toml):

ground  config, errors, malloc, text, storage, ranking: anyone may import them
peers   crawler, search (and ``mapreduce`` beside this package): never each other
top     indexing, eval, demo, cli: wire the peers
"""
