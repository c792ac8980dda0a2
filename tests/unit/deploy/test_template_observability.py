"""Alarms, their topic, the dashboard and the log groups: moto makes no alarm and reads no
dashboard body, so both are checked here, against the metric names the processes publish
(services/cloudwatch.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from services import cloudwatch
from tests.unit.deploy.cfn import resources

# (namespace, metric) -> what the alarm must say about missing data: the application's metrics
# are published by a live process, so silence is itself the failure, except for build failures
# (published only when a build ends) and 5xx counts (no data is no error).
REQUIRED_ALARMS = {
    ("AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count"): "notBreaching",
    ("AWS/ApplicationELB", "HTTPCode_Target_5XX_Count"): "notBreaching",
    ("AWS/ApplicationELB", "UnHealthyHostCount"): "notBreaching",
    ("AWS/ApplicationELB", "HealthyHostCount"): "breaching",
    ("AWS/RDS", "CPUUtilization"): "missing",
    ("AWS/RDS", "FreeStorageSpace"): "breaching",
    ("AWS/RDS", "DatabaseConnections"): "missing",
    ("Nimbus", cloudwatch.PAGES_COMMITTED): "breaching",
    ("Nimbus", cloudwatch.INDEX_AGE): "breaching",
    ("Nimbus", cloudwatch.INDEX_BUILD_FAILURES): "notBreaching",
}


def _alarms(tpl: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Alarms by (namespace, metric); a metric-math alarm by the metric its first query reads,
    its queries' metrics given the alarm's ``Dimensions`` for the checks below."""
    found = {}
    for a in resources(tpl, "AWS::CloudWatch::Alarm").values():
        props = a["Properties"]
        if "Metrics" in props:
            stats = [m["MetricStat"]["Metric"] for m in props["Metrics"] if "MetricStat" in m]
            assert len({json.dumps(m["Dimensions"]) for m in stats}) == 1  # one stack's data
            props = {**props, "Dimensions": stats[0]["Dimensions"]}
            found[(stats[0]["Namespace"], stats[0]["MetricName"])] = props
        else:
            found[(props["Namespace"], props["MetricName"])] = props
    return found


def test_a_paused_crawl_is_not_a_stalled_one(tpl: dict[str, Any]) -> None:
    """The crawl-stalled alarm reads PagesCommitted, or 1 while CrawlPaused says the operator
    paused the crawl; both metrics are the ones the committer publishes."""
    (stalled,) = [
        a["Properties"]
        for a in resources(tpl, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"]["Fn::Sub"].endswith("-crawl-stalled")
    ]
    read = {m["Id"]: m["MetricStat"]["Metric"]["MetricName"] for m in stalled["Metrics"] if "MetricStat" in m}
    assert read == {"pages": cloudwatch.PAGES_COMMITTED, "paused": cloudwatch.CRAWL_PAUSED}
    (shown,) = [m for m in stalled["Metrics"] if m.get("ReturnData", True)]
    assert shown["Expression"] == "IF(FILL(paused, 0) > 0, 1, FILL(pages, 0))"


def test_every_required_alarm_exists_and_notifies_the_topic(tpl: dict[str, Any]) -> None:
    alarms = _alarms(tpl)
    assert set(alarms) == set(REQUIRED_ALARMS)
    for key, missing in REQUIRED_ALARMS.items():
        alarm = alarms[key]
        assert alarm["TreatMissingData"] == missing, key
        assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}], key
        assert alarm["AlarmName"]["Fn::Sub"].startswith("${AWS::StackName}-"), key
        if key[0] == "Nimbus":  # the processes' dimension: the stack's name
            assert alarm["Dimensions"] == [
                {"Name": cloudwatch.STACK_DIMENSION, "Value": {"Ref": "AWS::StackName"}}
            ]
    subscription = tpl["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail" and subscription["Properties"]["Protocol"] == "email"


def test_crawl_stalled_fires_on_silence_but_notifies_only_when_the_crawl_should_run(
    tpl: dict[str, Any],
) -> None:
    """A dead committer publishes nothing: missing data must count as a stall. With
    CrawlerCount 0 the crawl is meant to stand still: the alarm notifies no one then."""
    alarm = _alarms(tpl)[("Nimbus", cloudwatch.PAGES_COMMITTED)]
    (pages,) = [m["MetricStat"] for m in alarm["Metrics"] if m["Id"] == "pages"]
    assert pages["Stat"] == "Sum" and alarm["ComparisonOperator"] == "LessThanThreshold"
    assert alarm["Threshold"] == 1 and pages["Period"] * alarm["EvaluationPeriods"] == 1800
    assert alarm["ActionsEnabled"] == {"Fn::If": ["CrawlRuns", True, False]}
    assert tpl["Conditions"]["CrawlRuns"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "CrawlerCount"}, "0"]}]}
    age = _alarms(tpl)[("Nimbus", cloudwatch.INDEX_AGE)]
    assert age["Statistic"] == "Maximum" and age["Threshold"] == {"Ref": "IndexMaxAgeSeconds"}


def test_dashboard_is_json_and_shows_every_alarm_and_metric(tpl: dict[str, Any]) -> None:
    body, variables = tpl["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    assert set(variables) == {"AlarmArn", "LoadBalancerName"}
    filled = re.sub(r"\$\{[\w:]+\}", "x", body)
    widgets = json.loads(filled)["widgets"]
    (alarm_widget,) = [w for w in widgets if w["type"] == "alarm"]
    names = {a["AlarmName"]["Fn::Sub"].removeprefix("${AWS::StackName}") for a in _alarms(tpl).values()}
    assert {arn.removeprefix("x") for arn in alarm_widget["properties"]["alarms"]} == names
    shown = json.dumps([w["properties"].get("metrics", []) for w in widgets])
    for _namespace, metric in REQUIRED_ALARMS:
        assert metric in shown, metric
    assert cloudwatch.INDEX_BUILDS_SUCCEEDED in shown


def test_each_role_has_a_log_group_and_every_boot_is_logged(tpl: dict[str, Any]) -> None:
    groups = {
        name: g["Properties"]["LogGroupName"]["Fn::Sub"]
        for name, g in resources(tpl, "AWS::Logs::LogGroup").items()
    }
    assert groups == {
        "CrawlerLogGroup": "/nimbus/${AWS::StackName}/crawler",
        "CommitterLogGroup": "/nimbus/${AWS::StackName}/committer",
        "SearchLogGroup": "/nimbus/${AWS::StackName}/search",
        "IndexerLogGroup": "/nimbus/${AWS::StackName}/indexer",
        "BootLogGroup": "/nimbus/${AWS::StackName}/boot",
    }
    for name in groups:
        assert tpl["Resources"][name]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
