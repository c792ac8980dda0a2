"""The url_ids a committer saw finished, so that links to them are left out of its inserts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter, itemgetter
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.crawler.frontier.entries import NewUrl, UrlState
from services.storage.sql.models import FrontierEntry
from services.text.urls import url_id

T = TypeVar("T")


class FinishedUrls:
    """url_ids this committer saw finished (fetched or failed): links to them are left out.

    Most links on a site lead to pages already crawled, and their frontier upsert is a
    no-op (only a waiting URL's priority counts its in-links): each still costs a row in the
    insert statement and a B-tree lookup in the database, the committer's largest cost.
    Heritrix keeps such a set (``UriUniqFilter``). Kept as the url_ids' 64-bit Python hashes
    (SipHash, salted per process as the set is, and cheaper than parsing a 64-bit prefix of
    the hex: docs/performance-notes.md; a collision, about 1 in 10^8 at 10^6 URLs, would
    leave one new URL out), bounded by ``cap`` (emptied when full: the set is only a
    shortcut; without it the upsert decides).
    A finished URL that later waits again (a recrawl released unfetched) only misses the
    in-link bumps to its priority.
    """

    def __init__(self, cap: int = 2_000_000) -> None:
        self.cap = cap
        self._keys: set[int] = set()
        self.skipped = 0

    def add(self, url_ids: Iterable[str]) -> None:
        keys = [hash(uid) for uid in url_ids]
        if len(self._keys) + len(keys) > self.cap:
            self._keys.clear()
        self._keys.update(keys)

    def load(self, session: Session) -> int:
        """Fill the set from the frontier's finished rows (up to ``cap``): a newly elected
        committer skips links to pages its predecessors committed. Returns how many."""
        rows = session.scalars(
            select(FrontierEntry.url_id)
            .where(FrontierEntry.state.in_((UrlState.DONE, UrlState.FAILED)))
            .limit(self.cap)
        )
        self._keys = {hash(uid) for uid in rows}
        return len(self._keys)

    def seen(self, uid: str) -> bool:
        """Whether ``uid`` is finished; a hit counts in ``skipped`` (the caller leaves it out)."""
        if hash(uid) in self._keys:
            self.skipped += 1
            return True
        return False

    def unknown_keys(self, urls: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(url, url_id) pairs less those finished."""
        return self._unknown(urls, itemgetter(1))

    def unknown(self, urls: list[NewUrl]) -> list[NewUrl]:
        """``urls`` less those finished (each given its url_id, so it is computed once)."""
        for new in urls:
            new.key = new.key or url_id(new.url)
        return self._unknown(urls, attrgetter("key"))

    def _unknown(self, items: list[T], key_of: Callable[[T], str]) -> list[T]:
        keys = self._keys
        out = [item for item in items if hash(key_of(item)) not in keys]
        self.skipped += len(items) - len(out)
        return out
