"""Alarms, the alert topic, the dashboard and the saved Logs Insights queries."""

from __future__ import annotations

import io
import itertools
import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hdfs_events import names
from stacks.settings import DeploySettings
from tests.infra.conftest import Synthesized
from tests.infra.synth import REPO

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


GLUE_JOB_ALARMS = ("glue-CompactEvents-failed", "glue-ActivityRollups-failed",
                   "glue-CompactAudit-failed", "glue-AttributeEvents-failed",
                   "glue-NamespaceInventory-failed")


def test_alarms_cover_dlqs_queue_age_consumer_glue_and_agent_heartbeat(
        prod: Synthesized) -> None:
    alarms = _alarms(prod)
    assert set(alarms) == {
        "event-dlq-not-empty", "apply-dlq-not-empty", "copy-dlq-not-empty-prod",
        "events-oldest-message-age", "consumer-errors", *GLUE_JOB_ALARMS,
        "agent-heartbeat-missing-prod", "namenode-unavailable-prod", "stream-gap-prod",
        "agent-inotify-gap-prod",
        "index-stalled-prod", "index-apply-failures-prod", "index-skipped-events-prod",
        "foreign-sender-prod", "index-bridged-ranges-prod", "sync-bytes-pending-prod",
        "quarantined-messages-prod", "index-skipped-messages-prod", "index-drift-prod",
        "index-drift-missing-prod", "quarantined-messages-other-clusters",
        "denied-access-prod", "audit-lag-prod", "audit-lines-unparsed-prod"}
    for dlq in ("event-dlq-not-empty", "apply-dlq-not-empty", "copy-dlq-not-empty-prod"):
        assert alarms[dlq]["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarms[dlq]["Threshold"] == 0
        assert alarms[dlq]["ComparisonOperator"] == "GreaterThanThreshold"
    assert "EventsDlq" in json.dumps(alarms["event-dlq-not-empty"]["Dimensions"])
    assert "ApplyDlq" in json.dumps(alarms["apply-dlq-not-empty"]["Dimensions"])
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
    for job in GLUE_JOB_ALARMS:
        assert alarms[job]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_every_alarm_is_in_the_alarm_table_of_docs_deploy_md(prod: Synthesized) -> None:
    table = (REPO / "docs" / "deploy.md").read_text().split("## Alarms", 1)[1].split("\n## ")[0]
    first_cells = re.findall(r"^\| (.+?) \|", table, re.M)  # the header's is "Id"
    ids = {i for cell in first_cells for i in re.findall(r"`([^`]+)`", cell)}
    for alarm_id in _alarms(prod):
        assert alarm_id.replace("-prod", "-<cluster>") in ids, alarm_id


def test_a_namenode_unavailable_for_the_configured_minutes_alarms_per_cluster(
        prod: Synthesized) -> None:
    alarm = _alarms(prod)["namenode-unavailable-prod"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (
        names.METRICS_NAMESPACE, names.METRIC_NAMENODE_UNAVAILABLE)
    assert alarm["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": "prod"}]
    # Every minute of the configured time had a heartbeat saying 1 (Maximum: an HA pair's
    # standby says 0 under the same dimension); no heartbeat is the heartbeat alarm's case.
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == (
        "Maximum", 60, DeploySettings().namenode_unavailable_minutes)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "GreaterThanOrEqualToThreshold", 1)
    assert alarm["TreatMissingData"] == "missing"


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


def test_index_stalled_and_apply_failures_alarm_per_cluster(deployed_env: Synthesized,
                                                            local: Synthesized) -> None:
    for env in (deployed_env, local):
        cluster = {"dev": "dev", "prod": "prod", "local": "demo"}[env.env]  # cdk.json's clusters
        alarms = _alarms(env)
        stalled = alarms[f"index-stalled-{cluster}"]
        assert (stalled["Namespace"], stalled["MetricName"]) == (
            names.METRICS_NAMESPACE, names.METRIC_INDEX_WAIT_MS)
        # The bare [Cluster] set lambdas/ingest/telemetry.py declares beside powertools' own.
        assert stalled["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]
        # The next range waited over 15 minutes in 3 consecutive 5-minute periods.
        assert (stalled["Statistic"], stalled["Period"], stalled["EvaluationPeriods"]) == (
            "Maximum", 300, 3)
        assert stalled.get("DatapointsToAlarm", 3) == 3
        assert (stalled["ComparisonOperator"], stalled["Threshold"]) == (
            "GreaterThanThreshold", 15 * 60 * 1000)
        # Only invocations that applied ranges publish IndexWaitMs: no data is no traffic.
        assert stalled["TreatMissingData"] == "notBreaching"
        assert "DLQ" in stalled["AlarmDescription"] and "checkpoint" in stalled[
            "AlarmDescription"]

        failures = alarms[f"index-apply-failures-{cluster}"]
        assert (failures["Namespace"], failures["MetricName"]) == (
            names.METRICS_NAMESPACE, names.METRIC_INDEX_APPLY_FAILURES)
        assert failures["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]
        # One failure is retried by the next message; 2 of 3 periods with one is not normal.
        assert (failures["Statistic"], failures["Period"], failures["EvaluationPeriods"],
                failures["DatapointsToAlarm"]) == ("Sum", 300, 3, 2)
        assert (failures["ComparisonOperator"], failures["Threshold"]) == (
            "GreaterThanOrEqualToThreshold", 1)
        assert failures["TreatMissingData"] == "notBreaching"
        assert "index apply failed" in failures["AlarmDescription"]

        skipped = alarms[f"index-skipped-events-{cluster}"]
        assert (skipped["MetricName"], skipped["Statistic"], skipped["Threshold"],
                skipped["ComparisonOperator"]) == (
            names.METRIC_INDEX_SKIPPED_EVENTS, "Sum", 1, "GreaterThanOrEqualToThreshold")
        assert skipped["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]
        assert "index skipped an event" in skipped["AlarmDescription"]


def _dimensions(cluster: str) -> list[dict[str, str]]:
    return [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]


def _emitted_by_the_consumer(capsys: pytest.CaptureFixture[str], cluster: str) -> dict:
    """The EMF document the consumer's telemetry writes for one quarantined message and one
    index range that went on without it, through a real powertools Metrics."""
    from aws_lambda_powertools import Metrics

    from lambdas.ingest.sequencer import ApplyReport
    from lambdas.ingest.telemetry import BatchTelemetry
    from tests.kit.ingest_aws import emf_documents

    capsys.readouterr()
    telemetry = BatchTelemetry()
    telemetry.quarantined(cluster)
    telemetry.applied(cluster, ApplyReport(ranges=1, skipped_messages=1), now_ms=0)
    telemetry.emit(Metrics(namespace=names.METRICS_NAMESPACE, service="monitoring-test"))
    (doc,) = [d for d in emf_documents(capsys.readouterr().out) if names.METRIC_QUARANTINED in d]
    return doc


def test_one_quarantined_or_skipped_message_alarms_on_the_metric_the_consumer_emits(
        deployed_env: Synthesized, local: Synthesized,
        capsys: pytest.CaptureFixture[str]) -> None:
    for env in (deployed_env, local):
        cluster = {"dev": "dev", "prod": "prod", "local": "demo"}[env.env]  # cdk.json's clusters
        doc = _emitted_by_the_consumer(capsys, cluster)
        (declared,) = doc["_aws"]["CloudWatchMetrics"]
        alarms = _alarms(env)
        for alarm_id, metric, reads in (
                (f"quarantined-messages-{cluster}", names.METRIC_QUARANTINED,
                 "'quarantined-messages'"),
                (f"index-skipped-messages-{cluster}", names.METRIC_INDEX_SKIPPED,
                 "index skipped quarantined messages")):
            alarm = alarms[alarm_id]
            assert doc[metric] == [1.0]
            assert (alarm["Namespace"], alarm["MetricName"]) == (declared["Namespace"], metric)
            # The alarm's dimensions are one set the document declares, with its values.
            assert [d["Name"] for d in alarm["Dimensions"]] in declared["Dimensions"]
            assert alarm["Dimensions"] == [{"Name": d["Name"], "Value": doc[d["Name"]]}
                                           for d in alarm["Dimensions"]]
            assert alarm["Dimensions"] == _dimensions(cluster)
            # One message in 5 minutes is already a loss: it pages.
            assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == (
                "Sum", 300, 1)
            assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
                "GreaterThanOrEqualToThreshold", 1)
            assert alarm["TreatMissingData"] == "notBreaching"  # no data: nothing quarantined
            assert reads in alarm["AlarmDescription"]


def test_a_message_quarantined_under_a_cluster_name_not_deployed_alarms_too(
        prod: Synthesized, capsys: pytest.CaptureFixture[str]) -> None:
    alarm = _alarms(prod)["quarantined-messages-other-clusters"]
    (query,) = alarm["Metrics"]
    match = re.fullmatch(r'SELECT SUM\((\w+)\) FROM SCHEMA\("(\w+)", (\w+)\) WHERE (.+)',
                         query["Expression"])
    assert match, query["Expression"]
    metric, namespace, dimension, where = match.groups()
    excluded = set(re.findall(rf"{dimension} != '([^']+)'", where))
    assert set(where.split(" AND ")) == {f"{dimension} != '{c}'" for c in excluded}
    assert excluded == {"prod"}  # cdk.json's clusters of prod

    # What the consumer writes for "unknown" (no cluster in the group id) and for a cluster
    # name this deployment does not have is counted; the deployed cluster is left to its own.
    for cluster, counted in (("unknown", True), ("prod-typo", True), ("prod", False)):
        doc = _emitted_by_the_consumer(capsys, cluster)
        (declared,) = doc["_aws"]["CloudWatchMetrics"]
        assert (namespace, metric) == (declared["Namespace"], names.METRIC_QUARANTINED)
        assert [dimension] in declared["Dimensions"] and doc[metric] == [1.0]
        assert (doc[dimension] not in excluded) is counted, cluster
    assert (query["Period"], alarm["EvaluationPeriods"], alarm["Threshold"],
            alarm["ComparisonOperator"]) == (300, 1, 1, "GreaterThanOrEqualToThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"
    assert "'quarantined-messages'" in alarm["AlarmDescription"]


def _published_by_verify(cluster: str, drift: int) -> tuple[dict, int]:
    """PutMetricData of `hdfs-events-agent verify` on an index missing `drift` HDFS files, and
    its exit code."""
    from onprem_agent.commands.verify import check
    from onprem_agent.verify import IndexedEntry
    from tests.unit.live.doubles import ListingDouble, dir_entry, file_entry

    class EmptyIndex:
        def entry(self, cluster: str, path: str) -> IndexedEntry | None:
            return None

        def children(self, cluster: str, parent: str) -> list[IndexedEntry]:
            return []

    class CloudWatch:
        def __init__(self) -> None:
            self.calls: list[dict] = []

        def put_metric_data(self, **call: object) -> None:
            self.calls.append(call)

    hdfs = [dir_entry("/d"), *(file_entry(f"/d/f{i}") for i in range(drift - 1))]
    cloudwatch = CloudWatch()
    code = check(cluster, ["/d"], lister=ListingDouble(hdfs), reader=EmptyIndex(),
                 threshold=0, topic_arn=None, workers=1, cloudwatch=cloudwatch,
                 out=io.StringIO())
    (call,) = cloudwatch.calls
    return call, code


def test_verify_drift_above_the_threshold_alarms_and_a_verify_that_stopped_alarms_too(
        deployed_env: Synthesized, local: Synthesized) -> None:
    settings = DeploySettings()
    for env in (deployed_env, local):
        cluster = {"dev": "dev", "prod": "prod", "local": "demo"}[env.env]  # cdk.json's clusters
        call, code = _published_by_verify(cluster, drift=3)
        (datum,) = call["MetricData"]
        alarms = _alarms(env)
        drift = alarms[f"index-drift-{cluster}"]
        assert (drift["Namespace"], drift["MetricName"], drift["Dimensions"]) == (
            call["Namespace"], datum["MetricName"], datum["Dimensions"])
        assert drift["Dimensions"] == _dimensions(cluster)
        # verify's own exit 1 and the alarm agree: 3 entries differ, more than the threshold.
        assert code == 1 and datum["Value"] == 3
        assert (drift["ComparisonOperator"], drift["Threshold"]) == (
            "GreaterThanThreshold", settings.index_drift_alarm)
        assert datum["Value"] > drift["Threshold"]
        # Maximum: the two edge nodes of an HA pair may both run it.
        assert (drift["Statistic"], drift["Period"], drift["EvaluationPeriods"]) == (
            "Maximum", 300, 1)
        # One datum a day: between runs the alarm keeps the last run's word.
        assert drift["TreatMissingData"] == "ignore"
        assert "journalctl -u hdfs-events-verify" in drift["AlarmDescription"]

        missing = alarms[f"index-drift-missing-{cluster}"]
        assert (missing["Namespace"], missing["MetricName"], missing["Dimensions"]) == (
            call["Namespace"], datum["MetricName"], datum["Dimensions"])
        # No datum in any hour of the window: verify stopped running, so it breaches.
        assert (missing["Statistic"], missing["Period"], missing["EvaluationPeriods"]) == (
            "SampleCount", 3600, settings.index_drift_missing_hours)
        assert missing.get("DatapointsToAlarm", missing["EvaluationPeriods"]) == missing[
            "EvaluationPeriods"]
        assert (missing["ComparisonOperator"], missing["Threshold"]) == ("LessThanThreshold", 1)
        assert missing["TreatMissingData"] == "breaching"
        # CloudWatch's limit for periods of an hour or more: 7 days in all.
        assert missing["Period"] * missing["EvaluationPeriods"] <= 7 * 86400
        # The units it names are the ones shipped (onprem_agent/deploy).
        for unit in re.findall(r"hdfs-events-verify\.(?:timer|service)",
                               missing["AlarmDescription"]):
            assert (REPO / "onprem_agent" / "deploy" / unit).is_file(), unit
        assert "hdfs-events-verify.timer" in missing["AlarmDescription"]


AUDIT_LOG = REPO / "tests" / "unit" / "contract" / "data" / "hdfs-audit.log"  # the kit's NameNode's


class _CloudWatch:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    def put_metric_data(self, **call: object) -> None:
        self.calls.append(call)


def _published_by_audit_run(cluster: str, *, lag_s: float) -> tuple[dict, int]:
    """The PutMetricData of `audit run`'s real counters and publisher after the NameNode's own
    audit lines, two more denials (another user, another command) and a line that does not
    parse, `lag_s` after the newest line; and how many denials that was."""
    from hdfs_events.audit import LineSource, parse_line
    from onprem_agent.audit.metrics import AuditCounters, AuditMetricsPublisher

    lines = AUDIT_LOG.read_text().splitlines()
    (denial,) = [line for line in lines if "allowed=false" in line]
    lines += [denial.replace("ugi=alice", "ugi=mallory"), denial.replace("cmd=create", "cmd=open"),
              "2026-11-26 12:31:15,001 INFO FSNamesystem.audit: not an audit message"]
    records = [parse_line(line, cluster, LineSource("nn1", "f", i)) for i, line in enumerate(lines)]
    counters = AuditCounters()
    counters.count(records)
    newest_s = max(r.time for r in records if r.time is not None) / 1000
    cloudwatch = _CloudWatch()
    AuditMetricsPublisher(cluster, counters, interval_s=60, client=cloudwatch,
                          clock=lambda: newest_s + lag_s).put_now()
    (call,) = cloudwatch.calls
    return call, sum(r.allowed is False for r in records)


def _datum(call: dict, metric: str) -> dict:
    (datum,) = [d for d in call["MetricData"] if d["MetricName"] == metric]
    return datum


_INSIGHTS = re.compile(r'SELECT SUM\((\w+)\) FROM SCHEMA\("(\w+)", ([\w, ]+)\) '
                       r"WHERE (\w+) = '([^']+)'")


def _summed_by_query(expression: str, call: dict) -> list[dict]:
    """The data of one PutMetricData a Metrics Insights SUM over SCHEMA(...) WHERE d = 'v'
    adds up: same namespace and metric, exactly the schema's dimensions, the value matched."""
    match = _INSIGHTS.fullmatch(expression)
    assert match, expression
    metric, namespace, schema, where, value = match.groups()
    assert namespace == call["Namespace"]
    return [d for d in call["MetricData"] if d["MetricName"] == metric
            and {x["Name"] for x in d["Dimensions"]} == set(schema.split(", "))
            and {"Name": where, "Value": value} in d["Dimensions"]]


def test_audit_alarms_watch_exactly_what_audit_run_publishes(deployed_env: Synthesized,
                                                              local: Synthesized) -> None:
    settings = DeploySettings()
    for env in (deployed_env, local):
        cluster = {"dev": "dev", "prod": "prod", "local": "demo"}[env.env]  # cdk.json's clusters
        call, denials = _published_by_audit_run(
            cluster, lag_s=settings.audit_lag_alarm_seconds + 1)
        alarms = _alarms(env)

        denied = alarms[f"denied-access-{cluster}"]
        (query,) = denied["Metrics"]
        summed = _summed_by_query(query["Expression"], call)
        # Each denial once: by command (create, open), not again by user.
        assert denials == 3 and sum(d["Value"] for d in summed) == denials
        assert {d["MetricName"] for d in summed} == {names.METRIC_DENIED_ACCESS}
        assert len(summed) == 2
        # A metric on [Cluster] alone would watch nothing: audit run never sends one.
        assert not [d for d in call["MetricData"] if d["MetricName"] ==
                    names.METRIC_DENIED_ACCESS and len(d["Dimensions"]) == 1]
        assert (query["Period"], denied["EvaluationPeriods"], denied["Threshold"],
                denied["ComparisonOperator"]) == (
            300, 1, settings.denied_access_alarm, "GreaterThanThreshold")
        # No audit shipper on a cluster is no data: never an alarm.
        assert denied["TreatMissingData"] == "notBreaching"
        assert "raw-audit/" in denied["AlarmDescription"]

        for alarm_id, metric, statistic, periods, threshold in (
                (f"audit-lag-{cluster}", names.METRIC_AUDIT_LAG_SECONDS, "Minimum", 3,
                 settings.audit_lag_alarm_seconds),
                (f"audit-lines-unparsed-{cluster}", names.METRIC_AUDIT_LINES_UNPARSED, "Sum", 1,
                 settings.audit_lines_unparsed_alarm)):
            alarm, datum = alarms[alarm_id], _datum(call, metric)
            assert (alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"]) == (
                call["Namespace"], datum["MetricName"], datum["Dimensions"])
            assert alarm["Dimensions"] == _dimensions(cluster)
            assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == (
                statistic, 300, periods)
            assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
                "GreaterThanThreshold", threshold)
            assert alarm["TreatMissingData"] == "notBreaching"
            # The lag one past the threshold and the one line that did not parse both breach.
            assert datum["Value"] > alarm["Threshold"], alarm_id
            assert "docs/agent.md" in alarm["AlarmDescription"]


def test_a_put_object_that_keeps_failing_raises_the_lag_the_audit_lag_alarm_watches(
        prod: Synthesized, tmp_path: Path) -> None:
    from onprem_agent.audit.logfiles import AuditTailer, RotatingLog
    from onprem_agent.audit.metrics import AuditCounters, AuditMetricsPublisher
    from onprem_agent.audit.settings import AuditSettings
    from onprem_agent.audit.shipper import AuditShipper

    alarm = _alarms(prod)["audit-lag-prod"]
    mutations = [line for line in AUDIT_LOG.read_text().splitlines() if "cmd=mkdirs" in line]
    (tmp_path / "hdfs-audit.log").write_text("\n".join(mutations[:2]) + "\n")
    settings = AuditSettings(log_dir=tmp_path, file="hdfs-audit.log", bucket="lake",
                             host="nn1", state_file=tmp_path / "position.json", max_batch_lines=1)
    stop = threading.Event()

    class S3Down:
        """Writes the first object; every PutObject after it fails (after botocore's retries)."""

        def __init__(self) -> None:
            self.puts = 0

        def put(self, key: str, body: bytes) -> None:
            self.puts += 1
            if self.puts > 1:
                stop.set()  # the test's end: the shipper raises instead of waiting to retry
                raise ConnectionError("S3 unreachable")

    first_line_s = datetime.strptime(mutations[0][:23], "%Y-%m-%d %H:%M:%S,%f").replace(
        tzinfo=UTC).timestamp()
    ticks = itertools.count()
    # Each reading of the clock is 20 minutes later: three make the lag an hour.
    clock = lambda: first_line_s + 1200 * next(ticks)  # noqa: E731
    counters, cloudwatch = AuditCounters(), _CloudWatch()
    publisher = AuditMetricsPublisher("prod", counters, interval_s=60, client=cloudwatch,
                                      clock=clock)
    shipper = AuditShipper("prod", settings, AuditTailer(RotatingLog(tmp_path, "hdfs-audit.log"),
                                                         None),
                           S3Down(), counters, stop, clock=clock, publish=publisher)
    with pytest.raises(ConnectionError):
        shipper.run()
    *_, during = cloudwatch.calls  # published while the PutObject failed
    assert _datum(during, names.METRIC_AUDIT_LINES_SHIPPED)["Value"] == 0
    lag = _datum(during, names.METRIC_AUDIT_LAG_SECONDS)
    assert (alarm["MetricName"], alarm["Dimensions"]) == (lag["MetricName"], lag["Dimensions"])
    assert lag["Value"] > alarm["Threshold"]


def _dashboard_widgets(s: Synthesized) -> list[dict]:
    """The dashboard body as JSON, CloudFormation tokens (the region) read as "TOKEN"."""
    (dashboard,) = s.resources("Monitoring", "AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    return json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))["widgets"]


def test_dashboard_has_a_namespace_index_row_per_cluster(deployed_env: Synthesized) -> None:
    cluster = deployed_env.env  # dev and prod each ship one cluster named like the env
    widgets = {w["properties"]["title"]: w for w in _dashboard_widgets(deployed_env)
               if w["properties"].get("title", "").startswith("Namespace index")}
    expected = {names.METRIC_INDEX_WAIT_MS: "Maximum", names.METRIC_INDEX_APPLY_FAILURES: "Sum",
                names.METRIC_INDEX_SKIPPED: "Sum"}
    shown = {}
    for widget in widgets.values():
        for metric in widget["properties"]["metrics"]:
            namespace, metric_name, dimension, value, options = metric
            assert (namespace, dimension, value) == (
                names.METRICS_NAMESPACE, names.DIMENSION_CLUSTER, cluster)
            shown[metric_name] = options["stat"]
    assert shown == expected
    assert len({w["y"] for w in widgets.values()}) == 1  # one row
    (wait,) = [w for w in widgets.values() if "wait" in w["properties"]["title"]]
    assert wait["properties"]["annotations"]["horizontal"][0]["value"] == 900_000


def test_no_deployed_name_says_drain_for_applying_the_index(deployed_env: Synthesized,
                                                           local: Synthesized) -> None:
    # Issue 34: the code calls it applying ranges; the alarm, metric, widget and saved query
    # were "drain" until the rename CHANGELOG.md lists. The continue request's wire values
    # ("#drain", kind=drain) never reach a template.
    for env in (deployed_env, local):
        for concern, template in env.templates.items():
            found = re.findall(r".{0,40}drain.{0,40}", json.dumps(template), re.I)
            assert not found, (env.env, concern, found)


def test_dashboard_has_a_sync_row_per_cluster(deployed_env: Synthesized) -> None:
    widgets = [w for w in _dashboard_widgets(deployed_env)
               if w["properties"].get("title", "").startswith("Sync")]
    shown = {m[1]: (m[3], m[4]["stat"]) for w in widgets for m in w["properties"]["metrics"]}
    assert shown == {names.METRIC_SYNC_LAG_SECONDS: (deployed_env.env, "Maximum"),
                     names.METRIC_SYNC_BYTES_PENDING: (deployed_env.env, "Maximum"),
                     names.METRIC_SYNC_BYTES: (deployed_env.env, "Sum"),
                     names.METRIC_SYNC_S3_RETRIES: (deployed_env.env, "Sum"),
                     names.METRIC_SYNC_PARKED: (deployed_env.env, "Maximum")}
    (bytes_widget,) = [w for w in widgets if "retried" in w["properties"]["title"]]
    axes = {m[1]: m[4].get("yAxis", "left") for m in bytes_widget["properties"]["metrics"]}
    assert axes == {names.METRIC_SYNC_BYTES: "left", names.METRIC_SYNC_S3_RETRIES: "right"}
    assert len({w["y"] for w in widgets}) == 1  # one row
    (pending,) = [w for w in widgets if "bytes still to copy" in w["properties"]["title"]]
    assert pending["properties"]["annotations"]["horizontal"][0]["value"] == 10 * 2**30


def test_dashboard_has_an_audit_row_over_the_dimensions_audit_run_sends(
        deployed_env: Synthesized) -> None:
    cluster = deployed_env.env
    widgets = [w for w in _dashboard_widgets(deployed_env)
               if w["properties"].get("title", "").startswith("Audit")]
    assert len(widgets) == 4 and len({w["y"] for w in widgets}) == 1  # one row
    call, denials = _published_by_audit_run(cluster, lag_s=10)
    denied = [d for d in call["MetricData"] if d["MetricName"] == names.METRIC_DENIED_ACCESS]
    searched: dict[str, float] = {}
    shown = set()
    for widget in widgets:
        for metric in widget["properties"]["metrics"]:
            if isinstance(metric[-1], dict) and "expression" in metric[-1]:
                expression = metric[-1]["expression"]
                if expression.startswith("SELECT"):
                    total = sum(d["Value"] for d in _summed_by_query(expression, call))
                    assert total == denials
                    continue
                match = re.fullmatch(r"SEARCH\('\{(\w+),(\w+),(\w+)\} MetricName=\"(\w+)\" "
                                     r"(\w+)=\"([^\"]+)\"', 'Sum', 300\)", expression)
                assert match, expression
                namespace, *schema, metric_name, where, value = match.groups()
                assert (namespace, where, value) == (call["Namespace"], schema[0], cluster)
                # Every series the search finds is one audit run sends, and they add up to
                # every denial once (by command, and again by user: two widgets).
                found = [d for d in denied if [x["Name"] for x in d["Dimensions"]] == schema
                         and d["Dimensions"][0]["Value"] == cluster]
                searched[schema[1]] = sum(d["Value"] for d in found)
                assert metric_name == names.METRIC_DENIED_ACCESS
            else:
                namespace, metric_name, dimension, value, options = metric
                assert (namespace, dimension, value) == (
                    call["Namespace"], names.DIMENSION_CLUSTER, cluster)
                assert [{"Name": dimension, "Value": value}] == _datum(
                    call, metric_name)["Dimensions"]
                shown.add((metric_name, options["stat"]))
    assert searched == {names.DIMENSION_COMMAND: denials, names.DIMENSION_USER: denials}
    assert shown == {(names.METRIC_AUDIT_LINES_SHIPPED, "Sum"),
                     (names.METRIC_AUDIT_LINES_UNPARSED, "Sum"),
                     (names.METRIC_AUDIT_LAG_SECONDS, "Minimum")}


def test_the_sync_lag_in_bytes_alarms_above_the_cdk_json_threshold_for_15_minutes(
        deployed_env: Synthesized, local: Synthesized) -> None:
    # dev and prod keep the default (10 GiB); cdk.json's local sets 1 GiB.
    for env, cluster, threshold in ((deployed_env, deployed_env.env, 10 * 2**30),
                                    (local, "demo", 2**30)):
        alarm = _alarms(env)[f"sync-bytes-pending-{cluster}"]
        assert (alarm["Namespace"], alarm["MetricName"]) == (
            names.METRICS_NAMESPACE, names.METRIC_SYNC_BYTES_PENDING)
        assert alarm["Dimensions"] == [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]
        assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == (
            "Minimum", 300, 3)
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
            "GreaterThanThreshold", threshold)
        assert alarm["TreatMissingData"] == "notBreaching"  # no sync on that cluster
        assert "sync status" in alarm["AlarmDescription"]


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


def test_saved_logs_insights_queries_read_the_consumer_and_attribution_log_groups(
        deployed_env: Synthesized) -> None:
    queries = {r["Properties"]["Name"].split("/", 1)[1]: r["Properties"] for r in
               deployed_env.resources("Monitoring", "AWS::Logs::QueryDefinition").values()}
    attribution = {k: queries.pop(k) for k in list(queries) if k.startswith("attribution/")}
    assert set(queries) == {"who-deleted-what-under-a-path", "history-of-one-path",
                            "top-writers-by-directory", "inotify-gaps",
                            "index-apply-problems", "quarantined-messages"}
    for query in queries.values():
        assert "ConsumerLogs" in json.dumps(query["LogGroupNames"])
    # The queries with the user read the attribution job's lines, as the Analytics stack names
    # its group (tests/unit/glue/test_attribution_log.py checks their fields).
    from stacks.saved_queries import ATTRIBUTION_LOGS_QUERIES

    assert set(attribution) == set(ATTRIBUTION_LOGS_QUERIES) == {
        "attribution/who-changed-what-under-a-path", "attribution/deletes-by-user",
        "attribution/changes-by-user"}
    (group,) = [r["Properties"]["LogGroupName"] for r in
                deployed_env.resources("Analytics", "AWS::Logs::LogGroup").values()]
    for query_id, query in attribution.items():
        assert query["LogGroupNames"] == [group]
        assert query["QueryString"] == ATTRIBUTION_LOGS_QUERIES[query_id]
    assert "UNLINK" in queries["who-deleted-what-under-a-path"]["QueryString"]
    gaps = queries["inotify-gaps"]["QueryString"]
    assert "type = 'GAP'" in gaps and "lost_txids" in gaps and "gap_end_txid" in gaps
    applying = queries["index-apply-problems"]["QueryString"]
    (pattern,) = re.findall(r"message like /(.+)/", applying)
    # The consumer's log lines (lambdas/ingest/consumer.py finish and apply_ranges: a continue
    # request not sent, a failure to apply ranges, skipped quarantined messages, a range passed
    # without its lost manifest, skipped events) match the filter.
    source = (REPO / "lambdas" / "ingest" / "consumer.py").read_text()
    lines = re.findall(r'logger\.\w+\(\s*"(index [^"]+)"', source)
    assert len(lines) == 5 and all(re.search(pattern, line) for line in lines), lines
    assert not re.search(pattern, "index ls /user")
    assert "cluster" in applying
    # The consumer's line of each quarantined message, with the fields the query shows.
    quarantined = queries["quarantined-messages"]["QueryString"]
    (line,) = re.findall(r"message = '([^']+)'", quarantined)
    logged = re.search(r'logger\.info\(\s*"' + re.escape(line) + r'", extra=\{(.*?)\}\)',
                       source, re.S)
    assert logged, line
    for name in ("message_id", "reason", "quarantine_key", "group_id"):
        assert f'"{name}"' in logged.group(1) and name in quarantined
