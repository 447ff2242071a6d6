"""Alarms on what each cluster's edge node and NameNode hosts publish: the agent's heartbeat
and NameNode reachability, inotify gaps, `verify`'s drift, the sync's backlog, the audit log."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw

from hdfs_events import names
from stacks.alarms import Alarms, cluster_metric
from stacks.settings import DeploySettings
from stacks.widgets import denied_access_total

# The sync's backlog stays above the threshold for this many 5-minute periods (its Minimum in
# each: one big file copied in a burst is not a backlog).
SYNC_BEHIND_PERIODS = 3

# `audit run`'s lag stays above the threshold for this many 5-minute periods. Minimum in each:
# with HA both NameNode hosts publish under the one cluster, and the standby's log, which holds
# only the reads it served, can stay quiet for hours while the active's is current.
AUDIT_LAG_PERIODS = 3


def add_cluster_agent_alarms(alarms: Alarms, *, cluster: str, settings: DeploySettings) -> None:
    alarm = alarms.add
    # Missing data is the point: a dead agent publishes nothing.
    alarm(f"agent-heartbeat-missing-{cluster}",
          cluster_metric(names.METRIC_AGENT_HEARTBEAT, cluster, "SampleCount",
                         Duration.minutes(1)),
          threshold=1, comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
          periods=settings.heartbeat_missing_minutes,
          missing=cw.TreatMissingData.BREACHING,
          description=f"No heartbeat from the {cluster} agent for "
          f"{settings.heartbeat_missing_minutes} minutes")
    # The agent waits out a NameNode restart (onprem_agent/live/reconnect.py) and says
    # 1 with each heartbeat meanwhile. Maximum: the standby of an HA pair says 0 under
    # the same dimension. Missing data is the heartbeat alarm's business, not this one's.
    alarm(f"namenode-unavailable-{cluster}",
          cluster_metric(names.METRIC_NAMENODE_UNAVAILABLE, cluster, "Maximum",
                         Duration.minutes(1)),
          threshold=1, comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          periods=settings.namenode_unavailable_minutes,
          missing=cw.TreatMissingData.MISSING,
          description=f"The {cluster} agent has not reached its NameNode for "
          f"{settings.namenode_unavailable_minutes} minutes (it keeps retrying and "
          "resumes at its checkpoint): see its 'NameNode ... unavailable' log line and "
          "`hdfs-events-agent doctor`")
    # Two routes for edits purged before the agent read them. The consumer counts the
    # GAP record that travels the stream with the events (it alarms even when the
    # agent's own PutMetricData failed); the agent's InotifyGap comes straight from the
    # edge node (it alarms even when the stream is stuck). Both are rare and both mean
    # lost history, so both page.
    gap_rule = ("edits purged before the agent read them: history between the txids "
                "is lost (see the 'inotify-gaps' Logs Insights query and docs/consumer.md)")
    for name, metric_name, statistic, who in (
            (f"stream-gap-{cluster}", names.METRIC_STREAM_GAPS, "Sum",
             f"A GAP record from the {cluster} agent reached the consumer"),
            (f"agent-inotify-gap-{cluster}", names.METRIC_INOTIFY_GAP, "SampleCount",
             f"The {cluster} agent reported an inotify gap")):
        alarms.on_any(name, cluster_metric(metric_name, cluster, statistic),
                      description=f"{who}: {gap_rule}")

    # `hdfs-events-agent verify` publishes IndexDrift once per run, from its timer
    # (onprem_agent/deploy/hdfs-events-verify.timer, daily). Missing data keeps the
    # state of the last run: nothing is known between runs, and an OK an hour after a
    # drift would read as "fixed". Maximum: both edge nodes of an HA pair may run it.
    drift = cluster_metric(names.METRIC_INDEX_DRIFT, cluster, "Maximum")
    alarm(f"index-drift-{cluster}", drift,
          threshold=settings.index_drift_alarm, missing=cw.TreatMissingData.IGNORE,
          description=f"`hdfs-events-agent verify` found more than "
          f"{settings.index_drift_alarm} entries of the {cluster} namespace index that "
          "differ from HDFS: its lines (missing, extra, type, size, mtime, each with "
          "the entry's txid) are in the journal of hdfs-events-verify.service on the "
          "edge node (`journalctl -u hdfs-events-verify`); see docs/edge-node.md")
    # A verify that stopped running (timer disabled, the unit failing before it
    # publishes, the edge node gone) is drift found by nobody: no run in the window
    # pages. Hourly periods: CloudWatch allows 7 days of them (1 day below an hour).
    alarm(f"index-drift-missing-{cluster}",
          drift.with_(statistic="SampleCount", period=Duration.hours(1)),
          threshold=1, comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
          periods=settings.index_drift_missing_hours,
          missing=cw.TreatMissingData.BREACHING,
          description=f"No `hdfs-events-agent verify` of cluster {cluster} has "
          f"published IndexDrift for {settings.index_drift_missing_hours} hours (its "
          "timer runs it daily): see `systemctl status hdfs-events-verify.timer "
          "hdfs-events-verify.service` and `journalctl -u hdfs-events-verify` on the "
          "edge node (docs/edge-node.md)")

    # The sync's lag in bytes (onprem_agent/sync): published every heartbeat while the
    # sync runs; no data is no sync (or a dead one: its own unit's journal says).
    alarm(f"sync-bytes-pending-{cluster}",
          cluster_metric(names.METRIC_SYNC_BYTES_PENDING, cluster, "Minimum"),
          threshold=settings.sync_bytes_pending_alarm,
          periods=SYNC_BEHIND_PERIODS,
          description=f"The {cluster} sync has had more than "
          f"{settings.sync_bytes_pending_alarm:,} bytes still to copy to S3 for "
          f"{SYNC_BEHIND_PERIODS * 5} minutes: see `hdfs-events-agent sync status` "
          "(running window, parked paths) and docs/sync.md")

    # `audit run` on the NameNode hosts (onprem_agent/audit/metrics.py). No data is no
    # audit shipper on that cluster (it is optional), never an alarm here; a dead one
    # is its systemd unit's business (hdfs-events-audit.service).
    alarm(f"denied-access-{cluster}", denied_access_total(cluster),
          threshold=settings.denied_access_alarm,
          description=f"The {cluster} NameNode denied more than "
          f"{settings.denied_access_alarm} accesses in 5 minutes (DeniedAccess, every "
          "command): a scan, or a job run as the wrong user. The dashboard's Audit row "
          "shows which commands and users; the lines (allowed=false) are in the lake "
          "under raw-audit/ (docs/agent.md, 'Audit log')")
    alarm(f"audit-lag-{cluster}",
          cluster_metric(names.METRIC_AUDIT_LAG_SECONDS, cluster, "Minimum"),
          threshold=settings.audit_lag_alarm_seconds, periods=AUDIT_LAG_PERIODS,
          description=f"The newest audit line `audit run` shipped from the {cluster} "
          f"NameNodes is more than {settings.audit_lag_alarm_seconds} s old, for "
          f"{AUDIT_LAG_PERIODS * 5} minutes: its PutObject keeps failing (its "
          "'audit: PutObject ... failed' lines in `journalctl -u hdfs-events-audit`), "
          "or the cluster had no mutation, denial or read under read_paths that long "
          "(then raise audit_lag_alarm_seconds); see docs/agent.md, 'Audit log'")
    alarm(f"audit-lines-unparsed-{cluster}",
          cluster_metric(names.METRIC_AUDIT_LINES_UNPARSED, cluster, "Sum"),
          threshold=settings.audit_lines_unparsed_alarm,
          description=f"More than {settings.audit_lines_unparsed_alarm} audit lines of "
          f"the {cluster} NameNodes did not parse in 5 minutes (AuditLinesUnparsed): "
          "they reach the lake with a reason and the compaction quarantines them, so "
          "their users attribute nothing. Usually [audit] time_format or timezone does "
          "not match the NameNode's log4j layout; see docs/agent.md, 'Audit log'")
