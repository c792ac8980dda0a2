"""Heartbeats: rows per crawler process, and the operator's reading of them."""

from __future__ import annotations

import pytest

from services.crawler.cluster.heartbeat import BEAT_EVERY, DEAD_AFTER, Beat, beat, nodes, status_table


def test_a_node_that_stops_beating_is_dead_whatever_its_row_says(sessions) -> None:
    with sessions.begin() as session:
        beat(session, Beat("a/all/1", "crawler", 100.0, 100.0, "running", {"pages": 5}))
        beat(session, Beat("b/0,1/2", "crawler", 101.0, 101.0, "running", {"pages": 7, "errors": 1}))
        beat(session, Beat("c/all/3", "crawler", 90.0, 95.0, "stopped", {"pages": 3}))
    with sessions.begin() as session:  # b beats again; a does not
        beat(session, Beat("b/0,1/2", "crawler", 101.0, 130.0, "running", {"pages": 9, "errors": 1}))
    now = 100.0 + DEAD_AFTER * BEAT_EVERY + 1
    with sessions() as session:
        views = {v.node_id: v for v in nodes(session, now)}
    assert views["a/all/1"].state == "dead"  # it never said it stopped: it was killed
    assert views["b/0,1/2"].state == "running" and views["b/0,1/2"].counters["pages"] == 9
    assert views["c/all/3"].state == "stopped"  # a clean stop stays a stop
    table = status_table(list(views.values()), now)
    assert "1 running, 1 dead; 17 pages in all" in table
    assert table.count("\n") == 4  # header, three nodes, totals


def test_commands_are_recorded_and_a_stop_applies_only_to_nodes_already_running(sessions) -> None:
    from services.crawler.cluster.heartbeat import command, control

    with sessions.begin() as session:
        assert control(session) == control(session).__class__()  # nothing asked yet
        command(session, "pause", 50.0)
    with sessions.begin() as session:
        assert control(session).paused
        command(session, "resume", 60.0)
        command(session, "stop", 70.0)
    with sessions() as session:
        now = control(session)
    assert not now.paused
    assert now.stops(started_at=65.0) and not now.stops(started_at=75.0)
    with sessions.begin() as session, pytest.raises(ValueError, match="pause, resume or stop"):
        command(session, "restart", 80.0)


def test_a_standby_committer_that_stops_beating_is_dead_too(sessions) -> None:
    with sessions.begin() as session:
        beat(session, Beat("c/committer/9", "committer", 100.0, 100.0, "standby", {}))
    with sessions() as session:
        [view] = nodes(session, 100.0 + DEAD_AFTER * BEAT_EVERY + 1)
    assert view.state == "dead"
