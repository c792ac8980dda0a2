"""Issue 29, item 3: every operator command of docs/deploy.md from a process with no route to
the database, through the site's admin API (``--remote`` / ``NIMBUS_ADMIN_URL``) and SSM, each
taking effect in the database the site serves (MariaDB)."""

from __future__ import annotations

import time

from sqlalchemy import select

from services.crawler.cluster import heartbeat
from services.crawler.frontier import entries
from services.storage.sql.models import BlockedHost, FrontierEntry, IndexBuild
from tests.integration.operator.conftest import Laptop, Site, make_stack


def test_every_operator_command_works_from_a_laptop_without_a_route_to_the_database(
    site: Site, laptop: Laptop, moto_server: str
) -> None:
    # The laptop cannot reach the database: the local command fails, and says what to do.
    local = laptop.nimbus("crawl", "status")
    assert local.returncode == 1 and "cannot reach the database" in local.stderr
    assert "--remote https://SITE/ (or set NIMBUS_ADMIN_URL)" in local.stderr

    now = time.time()
    with site.sessions.begin() as session:  # one crawler beating on the "stack"
        heartbeat.beat(
            session, heartbeat.Beat("ip-10-0-1-5/all/4242", "worker", now - 60, now, "running", {"pages": 7})
        )
    remote = ("--remote", site.url + "/")

    seeded = laptop.nimbus("crawl", "seed", *remote, "http://seed.test/a", "http://seed.test/b")
    assert seeded.returncode == 0, seeded.stderr
    assert seeded.stdout == "2 new URLs in the frontier (0 known already)\n"
    refused = laptop.nimbus("crawl", "seed", *remote, "ftp://seed.test/")
    assert refused.returncode == 2  # as locally: bad input
    assert refused.stderr == (
        "nimbus crawl seed: bad seed: not an absolute http(s) URL: 'ftp://seed.test/'; "
        "give absolute http(s) URLs\n"
    )
    blocked = laptop.nimbus(
        "crawl", "block", *remote, "--reason", "link farm", "spam.test", "http://ads.test/x"
    )
    assert blocked.returncode == 0 and blocked.stdout.startswith(
        "blocked spam.test, ads.test (and their subdomains)"
    )
    assert laptop.nimbus("crawl", "unblock", *remote, "ads.test").stdout.startswith("unblocked ads.test")

    # NIMBUS_ADMIN_URL instead of --remote, and the site's /admin URL as the operator copies it.
    by_env = {"NIMBUS_ADMIN_URL": site.url + "/admin"}
    paused = laptop.nimbus("crawl", "pause", **by_env)
    assert paused.returncode == 0 and paused.stdout.startswith("asked every crawler to pause")
    with site.sessions() as session:
        assert heartbeat.control(session).paused
    status = laptop.nimbus("crawl", "status", **by_env)
    assert status.returncode == 0, status.stderr
    assert "ip-10-0-1-5/all/4242" in status.stdout and "1 running, 0 dead; 7 pages in all" in status.stdout
    assert "frontier: 2 new" in status.stdout and "blocked: spam.test (link farm)" in status.stdout
    assert "paused:" in status.stdout
    assert laptop.nimbus("crawl", "resume", **by_env).returncode == 0
    assert laptop.nimbus("crawl", "stop", **by_env).returncode == 0

    asked = laptop.nimbus("index", "now", *remote)
    assert asked.returncode == 0 and asked.stdout.startswith("index build ")
    listed = laptop.nimbus("index", "status", *remote)
    assert listed.returncode == 0 and "requested" in listed.stdout and " admin " in listed.stdout

    with site.sessions() as session:
        assert {r.url for r in session.scalars(select(FrontierEntry))} == {
            "http://seed.test/a",
            "http://seed.test/b",
        }
        assert (
            session.get(FrontierEntry, entries.url_id("http://seed.test/a")).priority == entries.SEED_PRIORITY
        )
        assert [(b.host, b.reason) for b in session.scalars(select(BlockedHost))] == [
            ("spam.test", "link farm")
        ]
        control = heartbeat.control(session)
        assert not control.paused and control.stop_requested_at > now
        builds = session.scalars(select(IndexBuild)).all()
        assert [(b.state, b.requested_by) for b in builds] == [("requested", "admin")]
        assert asked.stdout.startswith(f"index build {builds[0].id} asked for: ")

    # migrate: on the stack's indexer through SSM Run Command (moto runs nothing: it reports success).
    stack = make_stack(moto_server, {"indexer": 1})
    migrated = laptop.nimbus("migrate", "--remote", **stack.aws_env())
    assert migrated.returncode == 0, migrated.stderr
    indexer = stack.instances["indexer"][0]
    assert f"running `nimbus migrate` on {indexer} (indexer of {stack.name}) through SSM" in migrated.stderr
    sent = _commands_sent(moto_server, indexer)
    assert [c["DocumentName"] for c in sent] == ["AWS-RunShellScript"]
    assert sent[0]["Parameters"]["commands"][0].endswith("/opt/nimbus/venv/bin/nimbus migrate")


def _commands_sent(endpoint: str, instance_id: str) -> list[dict]:
    import boto3

    ssm = boto3.client("ssm", endpoint_url=endpoint, region_name="us-east-1")
    return ssm.list_commands(InstanceId=instance_id)["Commands"]
