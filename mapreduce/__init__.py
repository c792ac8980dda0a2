"""The MapReduce jobs (mrjob) and their pure helpers: link graph and anchor text,
the inverted index, one PageRank iteration. They import only the ground floor
(config, text, storage, ranking), which is all the code zip shipped to their
tasks holds; the driver that runs them is ``services.indexing``."""
