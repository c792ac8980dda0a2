"""Benchmarks (`make bench`): Nimbus against named peers on the same data, same run."""
