"""Titles that authoring tools write by default, which name no page.

Dreamweaver gives every new page "Untitled Document" (in the editor's language),
FrontPage "New Page 1", GoLive "Welcome to Adobe GoLive 6"; a few million old pages
kept them. As a result title they say nothing, and every such page would look the
same in a result list, so the parser takes the page's first heading instead, as
Google does for a missing or boilerplate title.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(
    r"""^(?:
        untitled(?:[\s_-]*(?:document|page|\d+))?      # Dreamweaver, Photoshop exports
      | new\s+page\s*\d*                                # FrontPage
      | welcome\s+to\s+adobe\s+golive\s*\d*             # GoLive
      | document\s+sans\s+titre | sans\s+titre          # Dreamweaver, French
      | unbenanntes\s+dokument | unbenannt(?:[\s-]*\d+)?  # German
      | documento\s+sin\s+t[ií]tulo | sin\s+t[ií]tulo   # Spanish
      | documento\s+senza\s+titolo | senza\s+titolo     # Italian
      | documento\s+sem\s+t[ií]tulo | sem\s+t[ií]tulo   # Portuguese
      | naamloos\s+document | dokument\s+bez\s+tytu[lł]u | namnl[oö]st\s+dokument
      | 無題ドキュメント | 無題 | 未命名文档 | 无标题文档 | 제목\s*없음
      | no\s+title | title | document | page\s*\d* | home\s*page\s*title | insert\s+title\s+here
      | index(?:\.s?html?|\.php|\.asp)? | default\.aspx?
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def placeholder_title(title: str) -> bool:
    """Whether ``title`` (cleaned of extra whitespace) is an authoring tool's default."""
    return bool(_PLACEHOLDER.match(title.strip(" \t\n.-_|:")))
