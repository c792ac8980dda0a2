"""The current weather for a place, from an Open-Meteo-style HTTP API, never in the way.

The answer box is a nicety on top of the results, so the provider may be slow,
down or wrong and the results page must not notice: every lookup runs on a
small thread pool of its own and the page waits for it at most ``timeout_s``
(the request itself is bounded by the same timeout); any failure is ``None``
and one log warning naming the URL, never an exception. Answers are cached per
place (coordinates rounded to about a kilometre) for ``cache_ttl_s``, and
failures for a shorter time, so a provider that is down is asked once a minute,
not on every query; concurrent lookups of one place share one request.

``GET {base_url}/v1/forecast?latitude=..&longitude=..&current=temperature_2m,weather_code,wind_speed_10m``
is Open-Meteo's forecast API (https://open-meteo.com/en/docs); the public base
is ``https://api.open-meteo.com``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import httpx

from services.search.instant.places import Place

log = logging.getLogger(__name__)

CURRENT_FIELDS = "temperature_2m,weather_code,wind_speed_10m"
FAILURE_TTL_S = 60.0  # a failed provider is asked again after this (or the answer TTL, if shorter)
MAX_BODY_BYTES = 64 * 1024  # a current-weather answer is under 1 KB
MAX_ENTRIES = 2048  # cached places; the least recently used goes first
MAX_IN_FLIGHT = 16  # lookups waiting for the provider; more are skipped (no box), not queued
WORKERS = 4
# Beyond the records on Earth (-89.2 and 56.7 degrees C; 408 km/h gusts): a unit or parsing error.
TEMPERATURE_RANGE_C = (-100.0, 70.0)
WIND_RANGE_KMH = (0.0, 500.0)

# WMO weather interpretation codes, as Open-Meteo documents them (https://open-meteo.com/en/docs).
WMO_CODES: dict[int, str] = {
    0: "Clear sky",
    1: "Mainly clear",
    2: "Partly cloudy",
    3: "Overcast",
    45: "Fog",
    48: "Depositing rime fog",
    51: "Light drizzle",
    53: "Moderate drizzle",
    55: "Dense drizzle",
    56: "Light freezing drizzle",
    57: "Dense freezing drizzle",
    61: "Slight rain",
    63: "Moderate rain",
    65: "Heavy rain",
    66: "Light freezing rain",
    67: "Heavy freezing rain",
    71: "Slight snowfall",
    73: "Moderate snowfall",
    75: "Heavy snowfall",
    77: "Snow grains",
    80: "Slight rain showers",
    81: "Moderate rain showers",
    82: "Violent rain showers",
    85: "Slight snow showers",
    86: "Heavy snow showers",
    95: "Thunderstorm",
    96: "Thunderstorm with slight hail",
    99: "Thunderstorm with heavy hail",
}
# Open-Meteo's unit names; the answer is shown in degrees Celsius and km/h.
_TEMPERATURE_UNITS: dict[str, Callable[[float], float]] = {
    "°C": lambda t: t,
    "°F": lambda t: (t - 32.0) * 5.0 / 9.0,
}
_WIND_UNITS = {"km/h": 1.0, "m/s": 3.6, "mp/h": 1.609344, "mph": 1.609344, "kn": 1.852}


class WeatherFormatError(ValueError):
    """The provider's answer is not a current-weather reading we can trust; says what is wrong."""


@dataclass(frozen=True, slots=True)
class Weather:
    """What the answer box shows: the weather now at ``place``, and who said so."""

    place: Place
    temperature_c: float
    description: str
    wind_kmh: float
    observed: dt.datetime  # in UTC
    source: str = ""  # the provider's host (and port), named as the source


def describe(code: int) -> str | None:
    """The words for a WMO weather code, or ``None`` for a code Open-Meteo does not document."""
    return WMO_CODES.get(code)


def parse_current(payload: object, place: Place, source: str = "") -> Weather:
    """The ``current`` block of a forecast answer as a ``Weather``; ``WeatherFormatError`` if
    anything is missing, of the wrong type, not finite or not plausible on Earth."""
    if not isinstance(payload, Mapping):
        raise WeatherFormatError("the answer is not a JSON object")
    current = payload.get("current")
    if not isinstance(current, Mapping):
        raise WeatherFormatError("no 'current' object")
    units = payload.get("current_units")
    units = units if isinstance(units, Mapping) else {}

    temperature = _number(current, "temperature_2m")
    temperature_unit = units.get("temperature_2m", "°C")
    if temperature_unit not in _TEMPERATURE_UNITS:
        raise WeatherFormatError(f"unknown temperature unit {temperature_unit!r}")
    temperature = _TEMPERATURE_UNITS[temperature_unit](temperature)
    if not TEMPERATURE_RANGE_C[0] <= temperature <= TEMPERATURE_RANGE_C[1]:
        raise WeatherFormatError(f"temperature {temperature} °C is not plausible")

    wind = _number(current, "wind_speed_10m")
    wind_unit = units.get("wind_speed_10m", "km/h")
    if wind_unit not in _WIND_UNITS:
        raise WeatherFormatError(f"unknown wind speed unit {wind_unit!r}")
    wind *= _WIND_UNITS[wind_unit]
    if not WIND_RANGE_KMH[0] <= wind <= WIND_RANGE_KMH[1]:
        raise WeatherFormatError(f"wind speed {wind} km/h is not plausible")

    code = _number(current, "weather_code")
    description = describe(int(code)) if code.is_integer() else None
    if description is None:
        raise WeatherFormatError(f"weather_code {code} is not a WMO code Open-Meteo documents")

    return Weather(
        place=place,
        # + 0.0: -0.04 rounds to -0.0, which would show as "-0.0 °C"
        temperature_c=round(temperature, 1) + 0.0,
        description=description,
        wind_kmh=round(wind, 1) + 0.0,
        observed=_observed(current.get("time"), payload.get("utc_offset_seconds", 0)),
        source=source,
    )


def _number(block: Mapping[str, object], name: str) -> float:
    value = block.get(name)
    # bool is an int to Python, not a number to anyone else
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WeatherFormatError(f"{name} is {value!r}, not a number")
    number = float(value)
    if not math.isfinite(number):
        raise WeatherFormatError(f"{name} is {value!r}")
    return number


def _observed(value: object, offset: object) -> dt.datetime:
    """Open-Meteo's ``time`` ("2024-05-01T12:15", local to ``utc_offset_seconds``) in UTC."""
    if not isinstance(value, str):
        raise WeatherFormatError(f"time is {value!r}, not an ISO 8601 string")
    if isinstance(offset, bool) or not isinstance(offset, int) or abs(offset) > 18 * 3600:
        raise WeatherFormatError(f"utc_offset_seconds is {offset!r}")
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise WeatherFormatError(f"time {value!r} is not ISO 8601") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone(dt.timedelta(seconds=offset)))
    return when.astimezone(dt.UTC)


class WeatherLookup:
    """A lookup under way: ``result()`` waits for it until the client's timeout, no longer."""

    def __init__(self, future: Future[Weather | None], place: Place, deadline: float) -> None:
        self._future = future
        self._place = place
        self._deadline = deadline

    def done(self) -> bool:
        """Whether ``result()`` would answer without waiting."""
        return self._future.done()

    def result(self) -> Weather | None:
        try:
            weather = self._future.result(timeout=max(0.0, self._deadline - time.monotonic()))
        except (TimeoutError, CancelledError):
            return None
        # A cached answer may have been asked for by another place at the same coordinates.
        if weather is not None and weather.place != self._place:
            weather = replace(weather, place=self._place)
        return weather


def _done(value: Weather | None) -> Future[Weather | None]:
    future: Future[Weather | None] = Future()
    future.set_result(value)
    return future


class WeatherClient:
    """Current weather from ``base_url``, cached, bounded in time; never raises to its caller.

    ``clock`` (seconds, monotonic) decides cache expiry, so tests move time without sleeping;
    ``transport`` lets a test answer without a server.
    """

    def __init__(
        self,
        base_url: str,
        timeout_s: float,
        cache_ttl_s: float,
        *,
        failure_ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = MAX_ENTRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.endpoint = f"{self.base_url}/v1/forecast"
        self.source = urlsplit(self.base_url).netloc
        self.timeout_s = timeout_s
        self.cache_ttl_s = cache_ttl_s
        self.failure_ttl_s = min(FAILURE_TTL_S, cache_ttl_s) if failure_ttl_s is None else failure_ttl_s
        self._clock = clock
        self._max_entries = max_entries
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s), follow_redirects=False, transport=transport
        )
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="weather")
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[float, float], tuple[float, Weather | None]] = OrderedDict()
        self._in_flight: dict[tuple[float, float], Future[Weather | None]] = {}

    def start(self, place: Place) -> WeatherLookup:
        """Begin a lookup (or answer from the cache); the caller does its own work meanwhile."""
        deadline = time.monotonic() + self.timeout_s
        key = _key(place)
        with self._lock:
            cached = self._cached(key)
            if cached is not None:
                return WeatherLookup(_done(cached[0]), place, deadline)
            future = self._in_flight.get(key)
            if future is None:
                if len(self._in_flight) >= MAX_IN_FLIGHT:
                    log.debug("weather: %d lookups in flight, skipping %s", len(self._in_flight), place.name)
                    return WeatherLookup(_done(None), place, deadline)
                try:
                    future = self._pool.submit(self._fetch_and_keep, key, place)
                except RuntimeError:  # the client is closed (the app is stopping)
                    return WeatherLookup(_done(None), place, deadline)
                self._in_flight[key] = future
        return WeatherLookup(future, place, deadline)

    def current(self, place: Place) -> Weather | None:
        """The weather at ``place`` now, or ``None``; returns within ``timeout_s``."""
        return self.start(place).result()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    def _cached(self, key: tuple[float, float]) -> tuple[Weather | None] | None:
        """``(answer,)`` while a fresh entry (an answer or a failure) is cached; needs the lock."""
        entry = self._cache.get(key)
        if entry is None:
            return None
        expires, weather = entry
        if self._clock() >= expires:
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return (weather,)

    def _fetch_and_keep(self, key: tuple[float, float], place: Place) -> Weather | None:
        weather = self.fetch(place, key)
        ttl = self.cache_ttl_s if weather is not None else self.failure_ttl_s
        with self._lock:
            self._in_flight.pop(key, None)
            if ttl > 0:
                self._cache[key] = (self._clock() + ttl, weather)
                self._cache.move_to_end(key)
                while len(self._cache) > self._max_entries:
                    self._cache.popitem(last=False)
        return weather

    def fetch(self, place: Place, key: tuple[float, float] | None = None) -> Weather | None:
        """One request to the provider, no cache; ``None`` and a warning on any failure."""
        latitude, longitude = key or _key(place)
        params = {"latitude": f"{latitude:.2f}", "longitude": f"{longitude:.2f}", "current": CURRENT_FIELDS}
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._http.stream("GET", self.endpoint, params=params) as response:
                if response.status_code != 200:
                    raise WeatherFormatError(f"HTTP {response.status_code}")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise WeatherFormatError(f"answer larger than {MAX_BODY_BYTES} bytes")
                    if time.monotonic() > deadline:
                        raise WeatherFormatError(f"answer took longer than {self.timeout_s} s")
            return parse_current(json.loads(body), place, self.source)
        except Exception as exc:  # noqa: BLE001 - a broken provider must never break the results page
            reason = str(exc) or type(exc).__name__
            log.warning("weather provider %s failed for %s: %s", self.endpoint, place.name, reason)
            return None


def _key(place: Place) -> tuple[float, float]:
    """Coordinates rounded to 0.01 degree (about a kilometre): the cache's key and the request's."""
    return (round(place.latitude, 2) + 0.0, round(place.longitude, 2) + 0.0)
