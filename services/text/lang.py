"""Language identification with py3langid (langid.py's model, numpy-backed, offline)."""

from __future__ import annotations

_SAMPLE_CHARS = 2000  # enough for a confident guess; keeps the cost flat per page


def identify(text: str, hint: str = "") -> str:
    """ISO 639-1 code of the text's language, or ``hint``'s primary tag when the text is too short."""
    sample = text[:_SAMPLE_CHARS]
    if len(sample.split()) < 5:
        return hint.split("-")[0].lower() if hint else ""
    import py3langid  # loads its model on first use; keeps import of this module cheap

    lang, _score = py3langid.classify(sample)
    return lang
