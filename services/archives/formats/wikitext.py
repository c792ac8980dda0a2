"""Wikitext to clean text and wiki links, without leaking markup.

Written as a handful of linear passes (innermost-first for what nests), as the field's
extractors at Wikipedia scale do (WikiExtractor, gensim's wikicorpus), rather than
through a full parser: on the sample dump it is several times faster than
wikitextparser and mwparserfromhell and leaves no markup that either leaves
(docs/benchmarks.md, "Archive readers"). The passes:

1. comments, references, galleries, math, timelines, behaviour switches: gone;
2. templates ``{{...}}``, innermost first: gone, except the few whose argument is
   running text (``{{lang|fr|...}}``, ``{{nowrap|...}}``, ``{{convert|5|km}}``);
3. wiki links ``[[...]]``, innermost first (a file's caption may hold links): files,
   categories and interlanguage links are dropped; the rest become their anchor text
   and, when they name a page of the kept namespaces, a link;
4. tables, line by line (their syntax is line-based): cell text kept, attributes dropped;
5. external links to their label, bold and italics, HTML tags and entities, headings,
   list markers;
6. what removed templates leave behind: ``Allah (; , )``, ``Albedo ()``, ``[ ]``,
   ``such as,, or``, a line starting with the comma that followed a removed reference
   (``leftovers.tidy_leftovers`` and the wiki-only shapes below).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from services.text.extract.leftovers import tidy_leftovers

_DROP = re.compile(
    r"<(?:!--.*?(?:-->|\Z)"
    r"|ref\b[^>]*/>|ref\b[^>]*>.*?(?:</ref\s*>|\Z)|references\b[^>]*/>|references\b[^>]*>.*?</references\s*>"
    r"|(gallery|math|timeline|imagemap|score|graph|chem|ce|hiero|templatedata|mapframe|maplink|poem)\b[^>]*>"
    r".*?(?:</\1\s*>|\Z))",
    re.S | re.I,
)
_SWITCH = re.compile(r"__[A-Z]+__")
_TEMPLATE = re.compile(r"\{\{([^{}]*)\}\}")
_PARAMETER = re.compile(r"\{\{\{[^{}]*\}\}\}")
_LINK = re.compile(r"\[\[((?:[^\[\]]|\[(?!\[)|\](?!\]))*)\]\]")  # single brackets may stand inside
_EXTERNAL = re.compile(r"\[(?:https?:|ftp:|mailto:|//)[^\s\]]*\s*([^\]]*)\]", re.I)
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$", re.M)
_LIST = re.compile(r"^[*#:;]+\s*", re.M)
_RULE = re.compile(r"^-{4,}\s*$", re.M)
_ATTRS = re.compile(r"(?:[\w-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s|]+)\s*)+\|(?!\|)")
_PARENS = re.compile(r"\(([^()\n]*)\)")
_EDGES = " ,;:"  # what a removed template leaves at the edges of a parenthesis
_NOTHING = " .\u2013\u2014/-"  # a parenthesis of only these says nothing
_SPACE_BEFORE = re.compile(r"[ \t]+([,.;:!?])")
_SPACES = re.compile(r"  +")
_BLANK_LINES = re.compile(r"\n\s*\n(?:\s*\n)+")
_EMPTY_BRACKETS = re.compile(r"[ \t]*\[[\s,;:.]*\]")  # a removed template's brackets
_LEADING_PUNCTUATION = re.compile(r"^[ \t]*(?:[,;:]|\.(?=[ \t]))[ \t]*(?=\S)", re.M)  # not ".NET"
_INTERLANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]+)*")
# A media file by its name, whatever the wiki calls the namespace ([[Datei:Dom.jpg|mini|...]]
# in a German dump without <siteinfo>).
_MEDIA_NAME = re.compile(
    r"\.(?:jpe?g|png|gif|svg|tiff?|webp|xcf|ogg|oga|ogv|webm|mp3|wav|flac|mid|pdf|djvu|stl)\s*$", re.I
)
# Templates whose text is running prose, and which argument holds it (positional, from 1).
_TEXT_TEMPLATES: dict[str, Callable[[list[str]], str]] = {
    "lang": lambda a: a[-1] if len(a) >= 2 else "",
    "nowrap": lambda a: a[0] if a else "",
    "nobr": lambda a: a[0] if a else "",
    "small": lambda a: a[0] if a else "",
    "smaller": lambda a: a[0] if a else "",
    "big": lambda a: a[0] if a else "",
    "sic": lambda a: a[-1] if a else "",
    "nbsp": lambda a: " ",
    "'": lambda a: "'",
    "!": lambda a: "|",
    "snd": lambda a: " - ",
    "ndash": lambda a: "\u2013",
    "mdash": lambda a: "\u2014",
    "convert": lambda a: " ".join(a[:2]) if len(a) >= 2 else "",
    "cvt": lambda a: " ".join(a[:2]) if len(a) >= 2 else "",
    "quote": lambda a: a[0] if a else "",
    "main other": lambda a: "",
}


@dataclass(frozen=True)
class Namespaces:
    """What a wiki calls its namespaces (lower-cased names and aliases, by number)."""

    by_name: dict[str, int]

    def of(self, prefix: str) -> int | None:
        return self.by_name.get(prefix.strip().lower().replace("_", " "))


FILE_NS, CATEGORY_NS = 6, 14
# MediaWiki's canonical English names and aliases: used when a dump has no <siteinfo>, and
# beside a localized siteinfo (a French dump still understands [[File:...]]).
CANONICAL = {
    "media": -2, "special": -1, "talk": 1, "user": 2, "user talk": 3, "project": 4, "wikipedia": 4,
    "project talk": 5, "wikipedia talk": 5, "file": 6, "image": 6, "file talk": 7, "image talk": 7,
    "mediawiki": 8, "mediawiki talk": 9, "template": 10, "template talk": 11, "help": 12,
    "help talk": 13, "category": 14, "category talk": 15, "portal": 100, "portal talk": 101,
    "draft": 118, "draft talk": 119, "module": 828, "module talk": 829,
}  # fmt: skip


def _template(match: re.Match[str]) -> str:
    parts = match.group(1).split("|")
    name = parts[0].strip().lower().replace("_", " ")
    args = [p.strip() for p in parts[1:] if "=" not in p.split("[[")[0]]
    keep = _TEXT_TEMPLATES.get(name)
    if keep is None and name.startswith("lang-"):
        return args[0] if args else ""
    return keep(args) if keep is not None else ""


def _strip_templates(text: str) -> str:
    text = _PARAMETER.sub("", text)
    while True:
        text, n = _TEMPLATE.subn(_template, text)
        if not n:
            break
    return text.replace("{{", "").replace("}}", "")  # unbalanced ones: the braces alone go


def to_text(
    wikitext: str, namespaces: Namespaces, keep: frozenset[int], page_url: Callable[[str], str]
) -> tuple[str, list[tuple[str, str]]]:
    """(clean text, [(link URL, anchor text)]) of a page's wikitext. ``keep``: the namespaces
    whose pages are in the index (links elsewhere keep their text, not the link);
    ``page_url``: a page title's URL."""
    text = _strip_templates(_SWITCH.sub("", _DROP.sub("", wikitext)))
    links: list[tuple[str, str]] = []

    def link(match: re.Match[str]) -> str:
        target, bar, label = match.group(1).partition("|")
        target = target.strip()
        visible = target.startswith(":")
        target = target.lstrip(":").strip()
        prefix, colon, rest = target.partition(":")
        ns = namespaces.of(prefix) if colon else 0
        if not visible and (ns in (FILE_NS, CATEGORY_NS) or (colon and _MEDIA_NAME.search(rest))):
            return ""
        if not visible and colon and ns is None and _INTERLANGUAGE.fullmatch(prefix.strip()):
            return ""  # [[fr:Anarchisme]]: the same page in another language
        if bar and not label.strip():  # the pipe trick: [[Pipe (computing)|]] -> "Pipe"
            label = re.sub(r"\s*\(.*\)$", "", rest if ns else target)
        anchor = (label if bar else target).strip()
        page = target.split("#", 1)[0].strip()
        if page and (ns if ns is not None else 0) in keep and not page.startswith("#"):
            links.append((page_url(page), anchor))
        return anchor

    while True:
        text, n = _LINK.subn(link, text)
        if not n:
            break
    text = _tables(_EXTERNAL.sub(lambda m: m.group(1), text))
    text = _TAG.sub("", text.replace("'''", "").replace("''", ""))
    text = html.unescape(text).replace("[[", "").replace("]]", "").replace("\t", " ").replace("\u00a0", " ")
    text = _RULE.sub("", _LIST.sub("", _HEADING.sub(lambda m: m.group(2), text)))
    text = _EMPTY_BRACKETS.sub("", _PARENS.sub(_parenthesis, text))
    text = tidy_leftovers(_LEADING_PUNCTUATION.sub("", text))
    text = _SPACE_BEFORE.sub(r"\1", _SPACES.sub(" ", text))
    return _BLANK_LINES.sub("\n\n", text).strip(), links


def _parenthesis(match: re.Match[str]) -> str:
    """What removed templates leave in parentheses (``(; , )``, ``( ; born 1920)``) goes;
    an empty pair goes whole."""
    inner = match.group(1).strip(_EDGES)
    return f"({inner})" if inner.strip(_NOTHING) else ""


def _tables(text: str) -> str:
    if "{|" not in text and "\n|" not in text and "\n!" not in text:
        return text
    out = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(("{|", "|}", "|-")):
            continue
        if stripped.startswith("|+"):
            out.append(_cell(stripped[2:]))
        elif stripped.startswith(("|", "!")):
            cells = re.split(r"\|\||!!", stripped[1:])
            out.append(" ".join(c for c in (_cell(c) for c in cells) if c))
        else:
            out.append(line)
    return "\n".join(out).replace("|}", "").replace("{|", "")


def _cell(cell: str) -> str:
    return _ATTRS.sub("", cell).strip()
