"""The index build: from the crawl's documents to a published index segment.

Writes the job input (``manifest``), runs the MapReduce jobs of ``mapreduce/``
with the configured runner (``runner``, ``pagerank_driver``), reads the index
job's output back (``index_rows``), builds the segment's arrays without I/O
(``segment_arrays``) and publishes the segment and PageRank (``publish``);
``build`` wires the stages. It sits above the peers: it reads the database
and blob store, drives ``mapreduce`` and never runs inside a MapReduce task.
"""
