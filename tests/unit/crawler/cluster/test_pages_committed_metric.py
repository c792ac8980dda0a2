"""PagesCommitted, the crawl-stalled alarm's data: the elected committer's pages a minute, 0
included; CrawlPaused instead while the crawl is paused; nothing while it stands by; never an
exception."""

from __future__ import annotations

from services.cloudwatch import CRAWL_PAUSED, PAGES_COMMITTED, MetricsPublisher
from services.crawler.cluster.committer_role import PagesMeter


class Recorder:
    def __init__(self) -> None:
        self.values: list[float] = []
        self.paused: list[float] = []

    def put_metric_data(self, Namespace: str, MetricData: list[dict]) -> None:  # noqa: N803 - boto3's names
        self.values += [d["Value"] for d in MetricData if d["MetricName"] == PAGES_COMMITTED]
        self.paused += [d["Value"] for d in MetricData if d["MetricName"] == CRAWL_PAUSED]


def test_a_data_point_a_minute_zero_included_paused_said_so_none_while_standing_by() -> None:
    recorder = Recorder()
    publisher = MetricsPublisher("Nimbus", "test", lambda: recorder)
    meter = PagesMeter(publisher, every=60.0)
    for now, pages, elected, paused in [
        (0.0, 10, False, False),  # standing by: the elected committer counts
        (1.0, 10, True, False),  # elected: counting from here
        (60.0, 25, True, False),  # 59 s: not yet
        (61.0, 25, True, False),  # 15 pages
        (121.0, 25, True, False),  # 0: stalled, and said so
        (150.0, 30, True, True),  # paused: CrawlPaused 1 at once
        (180.0, 30, True, True),  # 30 s later: not yet again
        (210.0, 31, True, True),  # a minute paused: CrawlPaused 1
        (211.0, 31, False, True),  # paused and standing by: nothing
        (200.0, 32, True, False),  # elected again, running: counting afresh from 32
        (259.0, 40, True, False),
        (260.0, 41, True, False),  # 9 pages
    ]:
        meter.tick(now, pages, elected=elected, paused=paused)
    meter.flush(44)  # stopping: the minute under way
    meter.flush(44)  # nothing more
    assert publisher.drain(10)
    assert recorder.values == [15, 0, 9, 3]
    assert recorder.paused == [1, 1]


def test_a_refusing_cloudwatch_never_reaches_the_commit_loop() -> None:
    class Refusing:
        def put_metric_data(self, **_: object) -> None:
            raise RuntimeError("AccessDenied")

    publisher = MetricsPublisher("Nimbus", "test", Refusing)
    meter = PagesMeter(publisher, every=1.0)
    for now in range(5):
        meter.tick(float(now), now * 3, elected=True, paused=False)
    meter.flush(20)
    assert publisher.drain(10) and publisher.failures == 5
