"""Creation signals, rolling updates and group sizes: what CloudFormation and Auto Scaling
enforce on AWS and moto ignores (moto neither waits for signals nor rolls instances).

The boot time the timeouts are compared with is an estimate from the bootstrap's steps
(docs/deploy.md, "Rollouts"), until a rehearsal on AWS measures it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.deploy.template import BOOTSTRAP
from tests.unit.deploy.cfn import GROUP_OF, TEMPLATE_OF, user_data

# Seconds from launch to the service answering, estimated in docs/deploy.md: instance start
# and cloud-init ~60, packages ~90, the release bundle's copy and install ~90, settings, CA
# bundle and units ~10, migration and first start ~30; search ~310 (its kernels compiled).
BOOT_ESTIMATE = 280
SEARCH_BOOT_ESTIMATE = 310


def _value(tpl: dict[str, Any], node: Any) -> int:
    """A size in the template, with parameters at their defaults."""
    if isinstance(node, dict):
        return int(tpl["Parameters"][node["Ref"]]["Default"])
    return int(node)


def _seconds(duration: str) -> int:
    match = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?", duration)
    assert match, duration
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


EXPECTED_SIGNALS = {
    "indexer": 1,
    "committer": 2,
    "worker": {"Ref": "CrawlerCount"},
    "search": {"Ref": "SearchMinCount"},
}


@pytest.mark.parametrize("role", sorted(GROUP_OF))
def test_each_group_waits_for_healthy_instances_and_rolls_in_batches(tpl: dict[str, Any], role: str) -> None:
    """Creation completes only when every first instance signalled its service healthy; a new
    launch template (a new release) replaces instances in batches, each batch waiting for its
    signals, with scaling and health replacement paused; the instance signals its own group."""
    group = tpl["Resources"][GROUP_OF[role]]
    signal = group["CreationPolicy"]["ResourceSignal"]
    assert signal["Count"] == EXPECTED_SIGNALS[role]
    rolling = group["UpdatePolicy"]["AutoScalingRollingUpdate"]
    assert rolling["WaitOnResourceSignals"] is True and rolling["PauseTime"] == signal["Timeout"]
    assert rolling["MaxBatchSize"] >= 1
    props = group["Properties"]
    # CloudFormation refuses MinInstancesInService >= MaxSize (AWS::AutoScaling UpdatePolicy).
    assert _value(tpl, rolling["MinInstancesInService"]) < _value(tpl, props["MaxSize"])
    assert {"HealthCheck", "ReplaceUnhealthy", "AZRebalance", "AlarmNotification", "ScheduledActions"} <= set(
        rolling["SuspendProcesses"]
    )
    assert props["LaunchTemplate"]["Version"] == {"Fn::GetAtt": [TEMPLATE_OF[role], "LatestVersionNumber"]}
    script, _ = user_data(tpl, TEMPLATE_OF[role])
    assert f'--stack "${{AWS::StackName}}" --signal-resource {GROUP_OF[role]} ' in script
    assert f"--resource {GROUP_OF[role]} " in script  # the user data's own failure signal
    tags = {t["Key"]: t["Value"] for t in props["Tags"] if t["PropagateAtLaunch"]}
    assert tags["nimbus:role"] == role and tags["nimbus:stack"] == {"Ref": "AWS::StackName"}


def test_groups_have_ranges_and_two_azs(tpl: dict[str, Any]) -> None:
    """Sizes in ranges, not fixed: search at least two (one per AZ) up to SearchMaxCount,
    committers two with room for a third during a rollout, workers up to CrawlerMaxCount; the
    indexer is one by design (one driver of index builds). Every group spans two AZs."""
    sizes = {}
    for role, name in GROUP_OF.items():
        props = tpl["Resources"][name]["Properties"]
        sizes[role] = (_value(tpl, props["MinSize"]), _value(tpl, props["MaxSize"]))
        for branch in props["VPCZoneIdentifier"]["Fn::If"][1:]:
            azs = {
                tpl["Resources"][s["Ref"]]["Properties"]["AvailabilityZone"]["Fn::Select"][0] for s in branch
            }
            assert azs == {0, 1}, role
    assert sizes == {"indexer": (1, 1), "committer": (2, 3), "worker": (0, 20), "search": (2, 6)}
    assert tpl["Parameters"]["SearchMinCount"]["Default"] >= 2


def test_search_scales_on_cpu_and_keeps_serving_during_a_rollout(tpl: dict[str, Any]) -> None:
    """Target tracking owns the search group's desired capacity (the template sets none, so an
    update does not reset it); a rollout keeps SearchMinCount in service, so each new
    instance joins before an old one leaves; the load balancer drains quickly."""
    group = tpl["Resources"]["SearchGroup"]
    assert "DesiredCapacity" not in group["Properties"]
    assert group["UpdatePolicy"]["AutoScalingRollingUpdate"]["MinInstancesInService"] == {
        "Ref": "SearchMinCount"
    }
    assert group["Properties"]["HealthCheckType"] == "ELB"
    policy = tpl["Resources"]["SearchCpuScaling"]["Properties"]
    assert (
        policy["AutoScalingGroupName"] == {"Ref": "SearchGroup"}
        and policy["PolicyType"] == "TargetTrackingScaling"
    )
    tracking = policy["TargetTrackingConfiguration"]
    assert tracking["PredefinedMetricSpecification"] == {"PredefinedMetricType": "ASGAverageCPUUtilization"}
    assert tracking["TargetValue"] == {"Ref": "SearchCpuTarget"}
    attributes = tpl["Resources"]["SearchTargetGroup"]["Properties"]["TargetGroupAttributes"]
    assert {"Key": "deregistration_delay.timeout_seconds", "Value": "30"} in attributes


def test_boot_fits_the_grace_period_and_the_signal_timeout(tpl: dict[str, Any]) -> None:
    """The bootstrap gives up on an unhealthy service (and signals failure with the reason)
    before CloudFormation's timeout would fail the group without one; health checks wait
    longer than a boot takes."""
    health_timeout = int(re.search(r'HEALTH_TIMEOUT="(\d+)"', BOOTSTRAP.read_text()).group(1))
    for role, name in GROUP_OF.items():
        group = tpl["Resources"][name]
        boot = SEARCH_BOOT_ESTIMATE if role == "search" else BOOT_ESTIMATE
        timeout = _seconds(group["CreationPolicy"]["ResourceSignal"]["Timeout"])
        assert boot + health_timeout + 60 <= timeout, role
        assert group["Properties"]["HealthCheckGracePeriod"] >= 2 * boot, role


def test_the_indexer_prepares_the_database_before_the_others_start(tpl: dict[str, Any]) -> None:
    """Only the indexer migrates and creates the role users: the other groups are created
    (and rolled) after it."""
    for role in ("worker", "committer", "search"):
        assert tpl["Resources"][GROUP_OF[role]]["DependsOn"] == "IndexerGroup", role
    assert "DependsOn" not in tpl["Resources"]["IndexerGroup"]
