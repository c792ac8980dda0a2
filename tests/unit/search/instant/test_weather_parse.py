"""Open-Meteo's current-weather answer read into a ``Weather``, and anything untrustworthy refused:
the answer box shows nothing rather than a wrong temperature."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from services.search.instant.places import Place
from services.search.instant.weather import WMO_CODES, WeatherFormatError, describe, parse_current

PARIS = Place("Paris", "FR", 48.85341, 2.3488, 2_138_551, "France")


def answer(**current: object) -> dict:
    """An Open-Meteo forecast answer (its real shape), with ``current`` fields replaced."""
    body: dict = {
        "latitude": 48.86,
        "longitude": 2.3399997,
        "generationtime_ms": 0.03,
        "utc_offset_seconds": 0,
        "timezone": "GMT",
        "timezone_abbreviation": "GMT",
        "elevation": 43.0,
        "current_units": {
            "time": "iso8601",
            "interval": "seconds",
            "temperature_2m": "°C",
            "weather_code": "wmo code",
            "wind_speed_10m": "km/h",
        },
        "current": {
            "time": "2024-05-01T12:15",
            "interval": 900,
            "temperature_2m": 12.3,
            "weather_code": 3,
            "wind_speed_10m": 10.5,
        },
    }
    body["current"].update(current)
    return body


def test_a_good_answer() -> None:
    weather = parse_current(answer(), PARIS, "api.open-meteo.com")
    assert weather.place == PARIS
    assert weather.temperature_c == 12.3
    assert weather.description == "Overcast"
    assert weather.wind_kmh == 10.5
    assert weather.observed == dt.datetime(2024, 5, 1, 12, 15, tzinfo=dt.UTC)
    assert weather.source == "api.open-meteo.com"


def test_it_reads_the_json_text_as_sent() -> None:
    text = json.dumps(answer(temperature_2m=-3, weather_code=71.0, wind_speed_10m=0))
    weather = parse_current(json.loads(text), PARIS)
    assert (weather.temperature_c, weather.description, weather.wind_kmh) == (-3.0, "Slight snowfall", 0.0)


def test_local_time_is_turned_into_utc() -> None:
    body = answer(time="2024-05-01T14:15")
    body["utc_offset_seconds"] = 7200
    assert parse_current(body, PARIS).observed == dt.datetime(2024, 5, 1, 12, 15, tzinfo=dt.UTC)


def test_other_units_are_converted_to_celsius_and_kmh() -> None:
    body = answer(temperature_2m=50.0, wind_speed_10m=10.0)
    body["current_units"].update(temperature_2m="°F", wind_speed_10m="m/s")
    weather = parse_current(body, PARIS)
    assert weather.temperature_c == 10.0 and weather.wind_kmh == 36.0


def test_units_may_be_left_out_and_mean_open_meteos_defaults() -> None:
    body = answer()
    del body["current_units"]
    assert parse_current(body, PARIS).temperature_c == 12.3


def test_a_reading_just_below_zero_is_not_minus_zero() -> None:
    assert str(parse_current(answer(temperature_2m=-0.04), PARIS).temperature_c) == "0.0"


def _without(name: str) -> dict:
    body = answer()
    del body["current"][name]
    return body


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "garbage",
        42,
        {},
        {"current": None},
        {"current": "12.3"},
        _without("temperature_2m"),
        _without("weather_code"),
        _without("wind_speed_10m"),
        _without("time"),
        answer(temperature_2m="12.3"),
        answer(temperature_2m=None),
        answer(temperature_2m=True),
        answer(temperature_2m=float("nan")),
        answer(temperature_2m=float("inf")),
        answer(temperature_2m=1000.0),  # absurd: a unit or parsing error
        answer(temperature_2m=-273.0),
        answer(wind_speed_10m=-1.0),
        answer(wind_speed_10m=9999.0),
        answer(wind_speed_10m=[10]),
        answer(weather_code=4),  # not a code Open-Meteo documents
        answer(weather_code=3.5),
        answer(weather_code=-1),
        answer(weather_code="3"),
        answer(time="yesterday"),
        answer(time=1714565700),
    ],
)
def test_garbage_is_refused(payload: object) -> None:
    with pytest.raises(WeatherFormatError):
        parse_current(payload, PARIS)


def test_unknown_units_are_refused() -> None:
    body = answer()
    body["current_units"]["temperature_2m"] = "K"
    with pytest.raises(WeatherFormatError, match="unit"):
        parse_current(body, PARIS)
    body = answer()
    body["current_units"]["wind_speed_10m"] = "furlongs/fortnight"
    with pytest.raises(WeatherFormatError, match="unit"):
        parse_current(body, PARIS)


def test_a_bad_utc_offset_is_refused() -> None:
    body = answer()
    body["utc_offset_seconds"] = "+02:00"
    with pytest.raises(WeatherFormatError):
        parse_current(body, PARIS)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (0, "Clear sky"),
        (1, "Mainly clear"),
        (2, "Partly cloudy"),
        (3, "Overcast"),
        (45, "Fog"),
        (48, "Depositing rime fog"),
        (55, "Dense drizzle"),
        (57, "Dense freezing drizzle"),
        (61, "Slight rain"),
        (65, "Heavy rain"),
        (67, "Heavy freezing rain"),
        (75, "Heavy snowfall"),
        (77, "Snow grains"),
        (82, "Violent rain showers"),
        (86, "Heavy snow showers"),
        (95, "Thunderstorm"),
        (99, "Thunderstorm with heavy hail"),
    ],
)
def test_wmo_codes_in_words(code: int, words: str) -> None:
    assert describe(code) == words


def test_the_code_table_is_open_meteos() -> None:
    # The 28 codes Open-Meteo documents, and nothing else.
    documented = {0, 1, 2, 3, 45, 48, 51, 53, 55, 56, 57, 61, 63, 65, 66, 67, 71, 73, 75, 77}
    documented |= {80, 81, 82, 85, 86, 95, 96, 99}
    assert set(WMO_CODES) == documented
    assert all(words and words[0].isupper() for words in WMO_CODES.values())
    assert describe(4) is None and describe(100) is None
