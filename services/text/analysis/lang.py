"""Language identification with pycld2 (Google's CLD2, as Common Crawl uses it).

CLD2 reads a page's first ``_SAMPLE_CHARS`` characters about ten times faster
than py3langid, and names more languages right (docs/benchmarks.md): at a
thousand pages a second, a few percent of one core against almost half of it.
CLD2 says "unknown" when the text is too short or too mixed to tell; we then
fall back to the page's own declaration (``<html lang>``), and return "" when
there is none, which callers keep.
"""

from __future__ import annotations

import pycld2

_SAMPLE_CHARS = 1000  # plenty for CLD2 (it needs a few hundred); keeps the cost flat per page
# Below this many non-space characters the page's declaration is trusted instead. Counted in
# characters, not words: Japanese, Chinese and Thai write whole paragraphs without a space.
_MIN_CHARS = 16
UNKNOWN = ""
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
# CLD2 answers with ISO 639 codes withdrawn in 1989 for Hebrew and Javanese (and pages still
# declare these and Indonesian's and Yiddish's in <html lang>): the codes BCP 47 uses, so a
# language filter of "he" keeps Hebrew pages.
_WITHDRAWN = {"iw": "he", "jw": "jv", "in": "id", "ji": "yi"}
# "un" and "xxx": unknown; "xx-Hebr" and the like: a script CLD2 saw without a language it
# knows; "zzb", "zze", "zzh", "zzp": its joke languages (Bork, Elmer Fudd, Hacker, Pig Latin).
_NOT_A_LANGUAGE = ("un", "xx", "zz")


def identify(text: str, hint: str = "") -> str:
    """ISO 639-1 code of the text's language; ``hint``'s primary tag (or "") when CLD2 cannot tell."""
    fallback = _code(hint) if hint else UNKNOWN
    sample = text[:_SAMPLE_CHARS]
    if len(sample) - sample.count(" ") < _MIN_CHARS:  # other whitespace counts: CLD2 then decides
        return fallback
    data = sample.encode("utf-8", "replace")  # lone surrogates from a bad decode: CLD2 wants UTF-8
    try:
        # isPlainText: our text has no markup left; CLD2 then skips its tag scan.
        reliable, _bytes, details = pycld2.detect(data, isPlainText=True)
    except pycld2.error:  # CLD2 rejects control characters: drop them and ask once more
        try:
            reliable, _bytes, details = pycld2.detect(data.translate(None, _CONTROL_BYTES), isPlainText=True)
        except pycld2.error:
            return fallback
    code = str(details[0][1])
    if not reliable or code.startswith(_NOT_A_LANGUAGE):
        return fallback
    return _code(code)


def _code(tag: str) -> str:
    """The primary language subtag of ``tag``, lower case, withdrawn codes replaced."""
    primary = tag.split("-")[0].strip().lower()
    return _WITHDRAWN.get(primary, primary)


def keep_language(lang: str, kept: frozenset[str]) -> bool:
    """Whether a page in ``lang`` is stored: all when ``kept`` is empty; unknown is always kept."""
    return not kept or not lang or lang in kept
