"""How stored bytes are laid out: content blocks (``blocks``), record blocks (``records``),
the pair written together (``block_pair``) and the index segment's array contract
(``segment``; its packed arrays: ``bitpack``, ``segment_codec``, and the forward index's
coding, ``forward_index``). Pure formats, plus the pair's one write to a blob store."""
