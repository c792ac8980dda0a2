"""Which documents, in which order: a parsed query against one index segment.

``segment`` is the search side of a published segment (download, memory-map, term lookup);
``filters`` restricts results (``site:``, ``intitle:``, ...); ``retrieve`` decides the mode
(AND, OR, phrases) and ``rank`` scores (BM25F impacts times a bounded PageRank factor,
exact top-k with MaxScore), its compiled kernels in ``conjunction_kernel`` (AND:
``conjunction`` calls it) and ``blockmax_kernels`` (OR: ``blockmax`` lays the lists out
with ``posting_layout`` and calls it, and ``match_count`` where it pruned), with
``phrase``, ``feedback`` (RM3) and ``exact_forms`` (words as typed);
``duplicates`` finds other URLs of the same page, ``explain`` says why a document ranked,
``per_version`` keeps tables derived from one index version; ``kernel_cache`` fills numba's
disk cache with the compiled kernels before a service starts (``nimbus warm-kernels``).
"""
