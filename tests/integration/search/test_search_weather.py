"""The weather answer box against a fake Open-Meteo on loopback: shown for a query that names a
place, and when the provider is slow, down or talks garbage the results page comes without it,
on time. Answers and failures are cached (the fake counts requests); time is a test clock."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from services.search.http.app import create_app
from services.search.instant.places import Place
from services.search.instant.weather import WeatherClient
from tests.fake_weather import FakeProvider
from tests.integration.search.search_corpus import Doc, publish_corpus

BOX = '<section class="answer" aria-label="Weather">'
DOCS = [
    Doc("http://travel.example/paris", "Paris in spring", "Paris travel guide: museums, cafes and parks."),
    Doc("http://hotels.example/hilton", "Paris Hilton hotel", "A hotel near the Paris opera."),
    Doc("http://travel.example/lyon", "Lyon", "Lyon food and old town."),
]
PARIS = Place("Paris", "FR", 48.85341, 2.3488, 2_138_551, "France")
LYON = Place("Lyon", "FR", 45.74846, 4.84671, 472_317, "France")
ROME = Place("Rome", "IT", 41.89193, 12.51133, 2_318_895, "Italy")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    provider.thread.start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
def closed_url() -> str:
    """A loopback port that nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def published(settings):
    return publish_corpus(
        settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0),
        DOCS,
        "crawl-weather",
    )


@pytest.fixture
def open_app(published, fake) -> Iterator[Callable[..., TestClient]]:
    """Opens the app on ``published`` with some settings changed; all are closed at the end
    (before the fake provider stops, which ``fake`` being a dependency ensures)."""
    with ExitStack() as stack:

        def open_(**overrides: object) -> TestClient:
            app = create_app(published.with_overrides(**overrides), recheck_seconds=0)
            return stack.enter_context(TestClient(app))

        yield open_


def page(client: TestClient, q: str, **params: str) -> str:
    response = client.get("/", params={"q": q, **params})
    assert response.status_code == 200
    return response.text


def test_a_place_query_shows_the_weather_above_the_results(open_app, fake) -> None:
    text = page(open_app(weather_url=fake.url, weather_timeout=5.0), "paris")
    assert BOX in text
    box = text[text.index(BOX) : text.index("</section>", text.index(BOX))]
    assert "Weather in Paris, France" in box
    assert "12.3&nbsp;°C" in box and "Slight rain" in box
    assert "Wind 10&nbsp;km/h" in box  # 10.5 to the nearest even whole number
    assert '<time datetime="2024-05-01T12:15:00+00:00">01 May 12:15 UTC</time>' in box
    assert f"source: {urlsplit(fake.url).netloc}" in box
    assert "style=" not in box and "<script" not in box  # the site's CSP allows neither inline
    # above the results, which are all still there
    assert text.index(BOX) < text.index('<ol class="results"')
    assert "http://travel.example/paris" in text
    # the provider was asked for Paris, France (not Paris, Texas), for the current weather
    (request,) = fake.requests
    assert request["path"] == ["/v1/forecast"]
    assert float(request["latitude"][0]) == pytest.approx(48.85, abs=0.01)
    assert float(request["longitude"][0]) == pytest.approx(2.35, abs=0.01)
    assert request["current"] == ["temperature_2m,weather_code,wind_speed_10m"]


def test_weather_words_around_the_place_still_show_the_box(open_app, fake) -> None:
    client = open_app(weather_url=fake.url, weather_timeout=5.0)
    assert BOX in page(client, "weather in Paris")
    assert BOX in page(client, "Lyon forecast")


def test_a_query_that_is_more_than_a_place_gets_no_box_and_asks_nothing(open_app, fake) -> None:
    client = open_app(weather_url=fake.url, weather_timeout=5.0)
    text = page(client, "paris hilton")
    assert BOX not in text and "http://hotels.example/hilton" in text
    assert BOX not in page(client, "museums")
    assert BOX not in page(client, "")
    assert BOX not in page(client, "paris", page="2")  # an answer belongs on the first page
    assert fake.requests == []


def test_a_second_query_for_the_same_place_is_answered_from_the_cache(open_app, fake) -> None:
    client = open_app(weather_url=fake.url, weather_timeout=5.0)
    for q in ("paris", "Paris", "weather in paris", "paris"):
        assert "12.3&nbsp;°C" in page(client, q), q
    assert len(fake.requests) == 1
    assert BOX in page(client, "lyon")  # another place is another request
    assert len(fake.requests) == 2


@pytest.mark.parametrize("mode", ["garbage", "error"])
def test_a_provider_answering_garbage_or_500_costs_the_box_not_the_page(
    open_app, fake, caplog, mode: str
) -> None:
    fake.mode = mode
    client = open_app(weather_url=fake.url, weather_timeout=5.0)
    with caplog.at_level(logging.WARNING, logger="services.search.instant.weather"):
        text = page(client, "paris")
    assert BOX not in text
    assert '<ol class="results"' in text and "http://travel.example/paris" in text
    assert len(fake.requests) == 1
    assert any(f"{fake.url}/v1/forecast" in r.getMessage() for r in caplog.records)
    # the failure is cached too: a provider in trouble is not asked on every query
    assert BOX not in page(client, "paris")
    assert len(fake.requests) == 1


def test_a_slow_provider_costs_the_box_and_the_page_comes_back(open_app, fake) -> None:
    fake.mode = "slow"
    client = open_app(weather_url=fake.url, weather_timeout=0.3)
    text = page(client, "paris")  # the provider is still holding the request when this returns
    assert BOX not in text
    assert '<ol class="results"' in text and "http://travel.example/paris" in text
    assert fake.received.wait(timeout=10)
    assert len(fake.requests) == 1


def test_a_provider_that_is_not_there_costs_the_box_only(open_app, closed_url, caplog) -> None:
    client = open_app(weather_url=closed_url, weather_timeout=5.0)
    with caplog.at_level(logging.WARNING, logger="services.search.instant.weather"):
        text = page(client, "paris")
    assert BOX not in text
    assert "http://travel.example/paris" in text
    assert any(closed_url in r.getMessage() for r in caplog.records)


def test_without_a_weather_url_there_is_no_box_and_no_request(open_app, fake) -> None:
    client = open_app()  # weather_url unset: the default
    assert client.app.state.weather is None  # type: ignore[attr-defined]
    text = page(client, "paris")
    assert BOX not in text and "http://travel.example/paris" in text
    assert fake.requests == []


# The client's cache on its own, with a clock the test moves.


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def weather_client(fake, clock) -> Iterator[WeatherClient]:
    client = WeatherClient(fake.url, timeout_s=5.0, cache_ttl_s=600.0, clock=clock, max_entries=2)
    try:
        yield client
    finally:
        client.close()


def test_answers_are_kept_for_the_cache_ttl(weather_client, fake, clock) -> None:
    first = weather_client.current(PARIS)
    assert first is not None and first.temperature_c == 12.3 and first.place == PARIS
    clock.now += 599
    assert weather_client.current(PARIS) == first
    assert len(fake.requests) == 1
    clock.now += 1
    assert weather_client.current(PARIS) is not None
    assert len(fake.requests) == 2


def test_failures_are_kept_for_a_shorter_time(weather_client, fake, clock) -> None:
    fake.mode = "error"
    assert weather_client.failure_ttl_s == 60.0
    assert weather_client.current(PARIS) is None
    clock.now += 59
    assert weather_client.current(PARIS) is None
    assert len(fake.requests) == 1
    fake.mode = "good"
    clock.now += 1
    assert weather_client.current(PARIS) is not None  # the provider is back, and asked again
    assert len(fake.requests) == 2


def test_the_cache_is_bounded_least_recently_used_first(weather_client, fake) -> None:
    for place in (PARIS, LYON, PARIS, ROME):  # holds two: Rome pushes out Lyon, not Paris
        assert weather_client.current(place) is not None
    assert len(fake.requests) == 3
    assert weather_client.current(PARIS) is not None
    assert len(fake.requests) == 3
    assert weather_client.current(LYON) is not None
    assert len(fake.requests) == 4


def test_places_at_the_same_rounded_coordinates_share_an_answer(weather_client, fake) -> None:
    near = Place("Paris 1er", "FR", 48.8521, 2.3512, 17_000, "France")
    assert weather_client.current(PARIS) is not None
    answer = weather_client.current(near)
    assert answer is not None and answer.place == near  # the cached reading, named for this place
    assert len(fake.requests) == 1


def test_a_closed_client_answers_none(fake) -> None:
    client = WeatherClient(fake.url, timeout_s=5.0, cache_ttl_s=600.0)
    client.close()
    assert client.current(PARIS) is None
    assert fake.requests == []
