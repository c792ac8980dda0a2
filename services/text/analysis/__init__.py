"""The terms text gives: the one analyzer of index and query time (``analyze``: tokens,
the stop list in stopwords_en.txt, Snowball stems, CJK bigrams), words as typed
(``forms``), language identification (``lang``) and near-duplicate signatures
(``minhash``). Pure."""
