"""The weather answer's settings: off by default, read from NIMBUS_WEATHER_*, checked at start."""

from __future__ import annotations

import pytest

from services.config import Settings, SettingsError


def test_the_box_is_off_by_default() -> None:
    settings = Settings.from_env({})
    assert settings.search.weather_url == ""
    assert settings.search.weather_timeout == 0.3 and settings.search.weather_cache_seconds == 600.0


def test_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "NIMBUS_WEATHER_URL": "https://api.open-meteo.com",
            "NIMBUS_WEATHER_TIMEOUT": "0.5",
            "NIMBUS_WEATHER_CACHE_SECONDS": "60",
        }
    )
    assert settings.search.weather_url == "https://api.open-meteo.com"
    assert settings.search.weather_timeout == 0.5 and settings.search.weather_cache_seconds == 60.0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("NIMBUS_WEATHER_URL", "api.open-meteo.com"),
        ("NIMBUS_WEATHER_URL", "ftp://api.open-meteo.com"),
        ("NIMBUS_WEATHER_URL", "http://"),
        ("NIMBUS_WEATHER_URL", "http://[::1"),
        ("NIMBUS_WEATHER_TIMEOUT", "0"),
        ("NIMBUS_WEATHER_TIMEOUT", "-1"),
        ("NIMBUS_WEATHER_TIMEOUT", "nan"),
        ("NIMBUS_WEATHER_TIMEOUT", "soon"),
        ("NIMBUS_WEATHER_CACHE_SECONDS", "-5"),
        ("NIMBUS_WEATHER_CACHE_SECONDS", "inf"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        Settings.from_env({variable: value})
