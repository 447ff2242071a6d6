"""Alarms, the alert topic, the dashboard and the saved Logs Insights queries."""

from __future__ import annotations

import json

import pytest

from hdfs_events import names
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow


def _alarms(s: Synthesized) -> dict[str, dict]:
    return {r["Properties"]["AlarmName"].removeprefix(f"hdfs-events-{s.env}-"): r["Properties"]
            for r in s.resources("Monitoring", "AWS::CloudWatch::Alarm").values()}


def test_every_alarm_notifies_the_encrypted_alert_topic(deployed_env: Synthesized) -> None:
    (topic_id, topic), = deployed_env.resources("Monitoring", "AWS::SNS::Topic").items()
    assert "KmsMasterKeyId" in topic["Properties"]
    alarms = _alarms(deployed_env)
    assert alarms
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    outputs = deployed_env.templates["Monitoring"]["Outputs"]
    assert outputs["AlertTopicArn"]["Value"] == {"Ref": topic_id}


def test_alarms_cover_dlqs_queue_age_consumer_glue_and_agent_heartbeat(
        prod: Synthesized) -> None:
    alarms = _alarms(prod)
    assert set(alarms) == {
        "event-dlq-not-empty", "copy-dlq-not-empty", "events-oldest-message-age",
        "consumer-errors", "glue-CompactEvents-failed", "glue-ActivityRollups-failed",
        "agent-heartbeat-missing-prod", "stream-gap-prod", "agent-inotify-gap-prod"}
    for dlq in ("event-dlq-not-empty", "copy-dlq-not-empty"):
        assert alarms[dlq]["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarms[dlq]["Threshold"] == 0
        assert alarms[dlq]["ComparisonOperator"] == "GreaterThanThreshold"
    assert "Dlq" in json.dumps(alarms["event-dlq-not-empty"]["Dimensions"])
    age = alarms["events-oldest-message-age"]
    assert age["MetricName"] == "ApproximateAgeOfOldestMessage" and age["Threshold"] == 900
    assert alarms["consumer-errors"]["MetricName"] == "Errors"
    heartbeat = alarms["agent-heartbeat-missing-prod"]
    assert heartbeat["Namespace"] == names.METRICS_NAMESPACE
    assert heartbeat["MetricName"] == names.METRIC_AGENT_HEARTBEAT
    assert heartbeat["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": "prod"}]
    # A dead agent publishes nothing: missing data must alarm.
    assert heartbeat["TreatMissingData"] == "breaching"
    assert heartbeat["ComparisonOperator"] == "LessThanThreshold"
    for job in ("glue-CompactEvents-failed", "glue-ActivityRollups-failed"):
        assert alarms[job]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_one_gap_record_or_agent_gap_report_in_five_minutes_alarms_per_cluster(
        deployed_env: Synthesized) -> None:
    alarms = _alarms(deployed_env)
    for cluster in ({"dev": "dev", "prod": "prod"}[deployed_env.env],):  # cdk.json's clusters
        for name, metric, statistic in (
                (f"stream-gap-{cluster}", names.METRIC_STREAM_GAPS, "Sum"),
                (f"agent-inotify-gap-{cluster}", names.METRIC_INOTIFY_GAP, "SampleCount")):
            alarm = alarms[name]
            assert (alarm["Namespace"], alarm["MetricName"]) == (names.METRICS_NAMESPACE, metric)
            assert alarm["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]
            assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == (
                statistic, 300, 1)
            assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
                "GreaterThanOrEqualToThreshold", 1)
            # No data is the normal state: no gap.
            assert alarm["TreatMissingData"] == "notBreaching"
            assert "purged" in alarm["AlarmDescription"]


def test_dashboard_shows_stream_queues_consumer_agents_glue_and_lake(
        deployed_env: Synthesized) -> None:
    (dashboard,) = deployed_env.resources("Monitoring", "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in (names.METRIC_EVENTS, names.METRIC_MESSAGES, names.METRIC_BYTES,
                   names.METRIC_INGEST_LAG_MS, names.METRIC_QUARANTINED,
                   names.METRIC_AGENT_LAG_TXIDS, names.METRIC_AGENT_HEARTBEAT,
                   names.METRIC_STREAM_GAPS, names.METRIC_LOST_TXIDS, names.METRIC_INOTIFY_GAP,
                   "SNAPSHOT",
                   "ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible",
                   "Errors", "Duration", "ConcurrentExecutions",
                   "glue.driver.aggregate.elapsedTime", "TriggeredRules", "BucketSizeBytes"):
        assert metric in body, metric


def test_saved_logs_insights_queries_read_the_consumer_log_group(
        deployed_env: Synthesized) -> None:
    queries = {r["Properties"]["Name"].split("/", 1)[1]: r["Properties"] for r in
               deployed_env.resources("Monitoring", "AWS::Logs::QueryDefinition").values()}
    assert set(queries) == {"who-deleted-what-under-a-path", "history-of-one-path",
                            "top-writers-by-directory", "inotify-gaps"}
    for query in queries.values():
        assert "ConsumerLogs" in json.dumps(query["LogGroupNames"])
    assert "UNLINK" in queries["who-deleted-what-under-a-path"]["QueryString"]
    gaps = queries["inotify-gaps"]["QueryString"]
    assert "type = 'GAP'" in gaps and "lost_txids" in gaps and "gap_end_txid" in gaps
