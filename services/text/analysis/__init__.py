"""The terms text gives: the one analyzer of index and query time (``analyze``: tokens,
CJK bigrams and ICU's words of unspaced scripts, then per language a stop list, elision,
Snowball stems and accent folding; ``languages`` says which language gets what), words
as typed (``forms``), language identification (``lang``) and near-duplicate signatures
(``minhash``). Pure."""
