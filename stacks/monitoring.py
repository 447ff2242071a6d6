"""Monitoring: the alert topic, alarms on every way the pipeline can stall or lose its way, one
dashboard, and saved Logs Insights queries over the consumer's per-event log lines and the
attribution job's who-made-it lines."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from hdfs_events import names
from stacks.analytics import AnalyticsStack
from stacks.ingest import IngestStack
from stacks.ingest_function import SERVICE_NAME
from stacks.onprem_principal import alert_statements, output_suffix
from stacks.settings import DeploySettings
from stacks.storage import StorageStack, lake_bucket_name, removal_policy
from stacks.widgets import dashboard_rows, denied_access_total

# The next txid range of a cluster has waited this long for its messages, for 3 periods: ~30
# minutes in all. A failing message is retried max_receive_count (5) times, one visibility
# timeout (6 x consumer_timeout_seconds, 60 s by default) apart, so by then it is in the DLQ,
# or it was never sent (docs/deploy.md, "When an index alarm fires").
INDEX_STALLED_MS = 15 * 60 * 1000
INDEX_STALLED_PERIODS = 3
# Applying ranges that fails is retried by the cluster's next message: one failure is normal, two in
# three 5-minute periods are not.
APPLY_FAILURE_PERIODS, APPLY_FAILURE_DATAPOINTS = 3, 2

# The sync's backlog stays above the threshold for this many 5-minute periods (its Minimum in
# each: one big file copied in a burst is not a backlog).
SYNC_BEHIND_PERIODS = 3

# `audit run`'s lag stays above the threshold for this many 5-minute periods. Minimum in each:
# with HA both NameNode hosts publish under the one cluster, and the standby's log, which holds
# only the reads it served, can stay quiet for hours while the active's is current.
AUDIT_LAG_PERIODS = 3

# Fields the consumer logs on each event line (powertools puts extra keys at the top level).
LOGS_QUERIES: dict[str, logs.QueryString] = {
    "who-deleted-what-under-a-path": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "type", "path", "dst_path"],
        filter_statements=[
            "type in ['UNLINK', 'RENAME']",
            # Edit the prefix; RENAME counts as a delete when it moves a path out.
            "path like /^\\/user\\/alice\\//",
        ],
        sort="@timestamp desc", limit=1000),
    "history-of-one-path": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "index", "type", "path", "dst_path"],
        filter_statements=["path = '/user/alice/data/part-0000' or "
                           "dst_path = '/user/alice/data/part-0000'"],
        sort="txid asc", limit=10000),
    "top-writers-by-directory": logs.QueryString(
        filter_statements=["type in ['CREATE', 'CLOSE', 'APPEND']"],
        parse_statements=["path /^(?<dir>\\/[^\\/]+\\/[^\\/]+)/"],
        stats="count(*) as changes by cluster, dir",
        sort="changes desc", limit=50),
    # The consumer's ERROR line of each GAP record (lambdas/ingest/logging_modes.py).
    "inotify-gaps": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "gap_end_txid", "lost_txids", "detected_ms",
                "message_id"],
        filter_statements=["type = 'GAP'"],
        sort="@timestamp desc", limit=1000),
    # The consumer's failures to apply ranges (ERROR, with the stack trace), ranges that went on
    # without quarantined messages (WARNING) or a lost manifest (ERROR), events skipped
    # (WARNING), lambdas/ingest/consumer.py.
    "index-drain-problems": logs.QueryString(
        fields=["@timestamp", "level", "cluster", "message", "messages", "range", "txid",
                "path", "reason", "exception"],
        filter_statements=["message like /^index (drain failed|skipped|passed)/"],
        sort="@timestamp desc", limit=1000),
    # The consumer's INFO line of each quarantined message (lambdas/ingest/consumer.py
    # _quarantine): the reason and where its record sits in the lake.
    "quarantined-messages": logs.QueryString(
        fields=["@timestamp", "message_id", "group_id", "reason", "quarantine_key"],
        filter_statements=["message = 'message quarantined'"],
        sort="@timestamp desc", limit=1000),
}


# Over the attribution job's log group (glue_jobs/attribution_log.py): one line per changed
# attribution, the event and its user on one line. An event can have several lines (re-attributed
# by a late audit line, or logged again by a retried run), and the latest is its answer: each
# query keeps one line per (cluster, txid, index), by `dedup` after a sort on @timestamp (the
# time the line was logged; `dedup` admits only `limit` after it) or by `latest()` grouped by
# the key, so a repeated line cannot double a count. A line without `user` is an event whose
# attribution was withdrawn: coalesce shows it as "(unknown)", never as its old user.
# Raw query strings (CfnQueryDefinition): CDK's QueryString has no dedup and a fixed order.
ATTRIBUTION_LOGS_QUERIES: dict[str, str] = {
    # Edit the prefix; a RENAME out of the prefix is found by its path, into it by its dst_path.
    "attribution/who-changed-what-under-a-path": "\n| ".join((
        "fields @timestamp, cluster, txid, index, type, path, dst_path, timestamp, user, "
        "real_user, client_ip, caller_context",
        "filter path like /^\\/user\\/alice\\// or dst_path like /^\\/user\\/alice\\//",
        "sort @timestamp desc",
        "dedup cluster, txid, index",
        "limit 10000")),
    # UNLINKs and moves to a trash directory (`hdfs dfs -rm` without -skipTrash), per user.
    "attribution/deletes-by-user": "\n| ".join((
        "filter type = 'UNLINK' or (type = 'RENAME' and dst_path like /\\/\\.Trash\\//)",
        "fields coalesce(user, '(unknown)') as who",
        "stats latest(who) as deleted_by by cluster, txid, index",
        "stats count(*) as deletes by cluster, deleted_by",
        "sort deletes desc",
        "limit 1000")),
    # Edit the user; sorted by the NameNode's time of each change.
    "attribution/changes-by-user": "\n| ".join((
        "fields coalesce(user, '(unknown)') as who",
        "stats latest(who) as changed_by, latest(type) as change, latest(path) as on_path, "
        "latest(dst_path) as to_path, latest(timestamp) as namenode_ms, "
        "latest(client_ip) as from_ip by cluster, txid, index",
        "filter changed_by = 'alice'",
        "sort namenode_ms desc",
        "limit 10000")),
}


def _consumer_metric(metric_name: str, cluster: str, statistic: str) -> cw.Metric:
    """A consumer EMF metric by the bare [Cluster] dimension set (lambdas/ingest/telemetry.py
    declares it beside powertools' [service, Cluster])."""
    return cw.Metric(namespace=names.METRICS_NAMESPACE, metric_name=metric_name,
                     dimensions_map={names.DIMENSION_CLUSTER: cluster},
                     statistic=statistic, period=Duration.minutes(5))


class MonitoringStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 storage: StorageStack, ingest: IngestStack, analytics: AnalyticsStack,
                 **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = removal_policy(settings)

        # A key of our own: CloudWatch alarms cannot publish to a topic under aws/sns.
        key = kms.Key(self, "AlertKey", enable_key_rotation=True,
                      description="hdfs-events alert topic", removal_policy=removal)
        key.add_to_resource_policy(iam.PolicyStatement(
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"],
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")]))
        self.topic = sns.Topic(self, "Alerts", display_name="hdfs-events alerts",
                               master_key=key, enforce_ssl=True)
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        action = cw_actions.SnsAction(self.topic)

        # The agents publish their own alerts here too (inotify gap, `verify` drift). The grant
        # is made from this stack: Ingest, where the principals live, referencing this topic
        # would be a cycle (this stack reads Ingest's queues and function).
        self.agent_alert_policies: list[iam.ManagedPolicy] = []
        for principal in ingest.principals:
            policy = iam.ManagedPolicy(
                self, f"AgentAlerts-{principal.cluster}",
                managed_policy_name=f"{settings.prefix}-onprem-{principal.cluster}-alerts",
                description=f"hdfs-events agent of cluster {principal.cluster}: publish alerts",
                statements=alert_statements(self.topic, key))
            principal.attach(policy)
            self.agent_alert_policies.append(policy)

        events = ingest.events
        fn = ingest.consumer.function
        self.alarms: list[cw.Alarm] = []

        def alarm(alarm_id: str, metric: cw.IMetric, *, threshold: float, description: str,
                  comparison: cw.ComparisonOperator =
                  cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
                  periods: int = 1, datapoints: int | None = None,
                  missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING) -> None:
            a = cw.Alarm(self, alarm_id, alarm_name=f"{settings.prefix}-{alarm_id}",
                         alarm_description=description, metric=metric, threshold=threshold,
                         comparison_operator=comparison, evaluation_periods=periods,
                         datapoints_to_alarm=datapoints, treat_missing_data=missing)
            a.add_alarm_action(action)
            a.add_ok_action(action)
            self.alarms.append(a)

        five_min = Duration.minutes(5)
        alarm("event-dlq-not-empty",
              events.dlq.metric_approximate_number_of_messages_visible(
                  period=five_min, statistic="Maximum"),
              threshold=0, description="Event messages failed max_receive_count times (the "
              "consumer raised on them; a bad message is quarantined instead): read the "
              "consumer's ERROR lines, fix the cause, then redrive the DLQ to the event queue "
              "(docs/deploy.md, 'When an index alarm fires')")
        for cluster, copy in ingest.copy_requests.items():
            alarm(f"copy-dlq-not-empty-{cluster}",
                  copy.dlq.metric_approximate_number_of_messages_visible(
                      period=five_min, statistic="Maximum"),
                  threshold=0, description=f"A copy request to {cluster} can never succeed: "
                  "see its reason in the transfers table")
        alarm("events-oldest-message-age",
              events.queue.metric_approximate_age_of_oldest_message(
                  period=five_min, statistic="Maximum"),
              threshold=settings.oldest_message_alarm_seconds,
              description="The consumer is falling behind the agents")
        alarm("consumer-errors", fn.metric_errors(period=five_min, statistic="Sum"),
              threshold=0, description="The consumer Lambda failed invocations")
        for job in analytics.jobs:
            alarm(f"glue-{job.node.id}-failed",
                  job.metric_failure(period=Duration.hours(1), statistic="Sum"),
                  threshold=1, comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"Glue job {job.node.id} failed or timed out")
        for cluster in settings.clusters:
            # Missing data is the point: a dead agent publishes nothing.
            alarm(f"agent-heartbeat-missing-{cluster}",
                  cw.Metric(namespace=names.METRICS_NAMESPACE,
                            metric_name=names.METRIC_AGENT_HEARTBEAT,
                            dimensions_map={names.DIMENSION_CLUSTER: cluster},
                            statistic="SampleCount", period=Duration.minutes(1)),
                  threshold=1, comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
                  periods=settings.heartbeat_missing_minutes,
                  missing=cw.TreatMissingData.BREACHING,
                  description=f"No heartbeat from the {cluster} agent for "
                  f"{settings.heartbeat_missing_minutes} minutes")
            # The agent waits out a NameNode restart (onprem_agent/live/reconnect.py) and says
            # 1 with each heartbeat meanwhile. Maximum: the standby of an HA pair says 0 under
            # the same dimension. Missing data is the heartbeat alarm's business, not this one's.
            alarm(f"namenode-unavailable-{cluster}",
                  cw.Metric(namespace=names.METRICS_NAMESPACE,
                            metric_name=names.METRIC_NAMENODE_UNAVAILABLE,
                            dimensions_map={names.DIMENSION_CLUSTER: cluster},
                            statistic="Maximum", period=Duration.minutes(1)),
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
                alarm(name,
                      cw.Metric(namespace=names.METRICS_NAMESPACE, metric_name=metric_name,
                                dimensions_map={names.DIMENSION_CLUSTER: cluster},
                                statistic=statistic, period=five_min),
                      threshold=1,
                      comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                      description=f"{who}: {gap_rule}")

            # The index applies a cluster's txid ranges in order (lambdas/ingest/sequencer.py).
            # IndexWaitMs comes only from invocations that applied ranges: no data is no traffic, not
            # a stall (a stalled range still gets data from every later message's invocation).
            alarm(f"index-stalled-{cluster}",
                  _consumer_metric(names.METRIC_INDEX_WAIT_MS, cluster, "Maximum"),
                  threshold=INDEX_STALLED_MS, periods=INDEX_STALLED_PERIODS,
                  description=f"The {cluster} namespace index has waited more than "
                  f"{INDEX_STALLED_MS // 60_000} minutes for the messages of its next txid "
                  "range: one is in the event DLQ (redrive it) or was lost (restart the agent "
                  "from an earlier checkpoint); see docs/deploy.md")
            # lambdas/ingest/senders.py: each message is quarantined already; the alarm is
            # for whoever owns the credentials that sent it.
            alarm(f"foreign-sender-{cluster}",
                  _consumer_metric(names.METRIC_FOREIGN_SENDER, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"A message claiming cluster {cluster} came from a principal "
                  f"that is not the {cluster} agent's, or sat in another cluster's message "
                  "group: quarantined. Its SenderId is in the consumer's 'message from a "
                  "sender that is not its cluster's principal' log line; see docs/consumer.md")
            alarm(f"index-drain-failures-{cluster}",
                  _consumer_metric(names.METRIC_INDEX_APPLY_FAILURES, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  periods=APPLY_FAILURE_PERIODS, datapoints=APPLY_FAILURE_DATAPOINTS,
                  description=f"Applying the {cluster} namespace index failed in "
                  f"{APPLY_FAILURE_DATAPOINTS} of {APPLY_FAILURE_PERIODS} 5-minute periods: "
                  "see the consumer's 'index drain failed' log lines (Logs Insights query "
                  "'index-drain-problems')")

            # An event DynamoDB can never store (lambdas/ingest/index.py, `unstorable`) is
            # skipped so the index goes on; the entry it would have changed is now wrong.
            alarm(f"index-skipped-events-{cluster}",
                  _consumer_metric(names.METRIC_INDEX_SKIPPED_EVENTS, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"The {cluster} namespace index skipped an event it cannot "
                  "store (a name over DynamoDB's key limits, a RENAME into its own subtree): "
                  "see the consumer's 'index skipped an event' log lines (Logs Insights query "
                  "'index-drain-problems') and `hdfs-events-agent verify`")

            # Messages the consumer quarantined (lambdas/ingest/quarantine.py), counted under the
            # cluster their group id names: their events reach neither raw/ nor the index
            # until the cause is fixed. One is already a loss, so one pages.
            alarm(f"quarantined-messages-{cluster}",
                  _consumer_metric(names.METRIC_QUARANTINED, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"The consumer quarantined a message of the {cluster} stream "
                  "(unreadable, a contract it does not know, or a foreign sender): its events "
                  "reach neither raw/ in the lake nor the index. Read each reason with the Logs "
                  "Insights query 'quarantined-messages' (the record is at its "
                  "quarantine_key in the lake bucket); see docs/consumer.md, 'Quarantine'")
            # A manifest named a quarantined message and its range went on without it
            # (lambdas/ingest/sequencer.py): the index now lacks that message's events.
            alarm(f"index-skipped-messages-{cluster}",
                  _consumer_metric(names.METRIC_INDEX_SKIPPED, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"The {cluster} namespace index went on without quarantined "
                  "messages a manifest named: their events are missing from it. See the "
                  "consumer's 'index skipped quarantined messages' log line (Logs Insights "
                  "query 'index-drain-problems') and the reasons (query "
                  "'quarantined-messages'); after the fix, `hdfs-events-agent verify` shows "
                  "the entries still wrong")

            # `hdfs-events-agent verify` publishes IndexDrift once per run, from its timer
            # (onprem_agent/deploy/hdfs-events-verify.timer, daily). Missing data keeps the
            # state of the last run: nothing is known between runs, and an OK an hour after a
            # drift would read as "fixed". Maximum: both edge nodes of an HA pair may run it.
            drift = cw.Metric(namespace=names.METRICS_NAMESPACE,
                              metric_name=names.METRIC_INDEX_DRIFT,
                              dimensions_map={names.DIMENSION_CLUSTER: cluster},
                              statistic="Maximum", period=five_min)
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
                  cw.Metric(namespace=names.METRICS_NAMESPACE,
                            metric_name=names.METRIC_SYNC_BYTES_PENDING,
                            dimensions_map={names.DIMENSION_CLUSTER: cluster},
                            statistic="Minimum", period=five_min),
                  threshold=settings.sync_bytes_pending_alarm,
                  periods=SYNC_BEHIND_PERIODS,
                  description=f"The {cluster} sync has had more than "
                  f"{settings.sync_bytes_pending_alarm:,} bytes still to copy to S3 for "
                  f"{SYNC_BEHIND_PERIODS * 5} minutes: see `hdfs-events-agent sync status` "
                  "(running window, parked paths) and docs/sync.md")

            # The cluster's own manifest was unreadable (quarantined): its range is passed so
            # the index goes on (lambdas/ingest/sequencer.py, _bridge_hole); its events are in
            # the lake but not in the index.
            alarm(f"index-bridged-ranges-{cluster}",
                  _consumer_metric(names.METRIC_INDEX_BRIDGED_RANGES, cluster, "Sum"),
                  threshold=1,
                  comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                  description=f"The {cluster} namespace index passed a txid range whose "
                  "manifest was quarantined: see the consumer's 'index passed a range' log "
                  "line (Logs Insights query 'index-drain-problems') and the quarantined "
                  "manifest; repair with `hdfs-events-agent verify`")

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
                  cw.Metric(namespace=names.METRICS_NAMESPACE,
                            metric_name=names.METRIC_AUDIT_LAG_SECONDS,
                            dimensions_map={names.DIMENSION_CLUSTER: cluster},
                            statistic="Minimum", period=five_min),
                  threshold=settings.audit_lag_alarm_seconds, periods=AUDIT_LAG_PERIODS,
                  description=f"The newest audit line `audit run` shipped from the {cluster} "
                  f"NameNodes is more than {settings.audit_lag_alarm_seconds} s old, for "
                  f"{AUDIT_LAG_PERIODS * 5} minutes: its PutObject keeps failing (its "
                  "'audit: PutObject ... failed' lines in `journalctl -u hdfs-events-audit`), "
                  "or the cluster had no mutation, denial or read under read_paths that long "
                  "(then raise audit_lag_alarm_seconds); see docs/agent.md, 'Audit log'")
            alarm(f"audit-lines-unparsed-{cluster}",
                  cw.Metric(namespace=names.METRICS_NAMESPACE,
                            metric_name=names.METRIC_AUDIT_LINES_UNPARSED,
                            dimensions_map={names.DIMENSION_CLUSTER: cluster},
                            statistic="Sum", period=five_min),
                  threshold=settings.audit_lines_unparsed_alarm,
                  description=f"More than {settings.audit_lines_unparsed_alarm} audit lines of "
                  f"the {cluster} NameNodes did not parse in 5 minutes (AuditLinesUnparsed): "
                  "they reach the lake with a reason and the compaction quarantines them, so "
                  "their users attribute nothing. Usually [audit] time_format or timezone does "
                  "not match the NameNode's log4j layout; see docs/agent.md, 'Audit log'")

        # A message whose group id names no cluster of this deployment (an agent with a
        # misspelt [cluster], a group id without one: the consumer counts those under
        # "unknown") is quarantined under that name, which no per-cluster alarm watches. A
        # Metrics Insights query sums the [Cluster] series of every other name. Cluster names
        # are [A-Za-z0-9_.-] (hdfs_events/ids.py): nothing to escape in the quotes.
        others = " AND ".join(f"{names.DIMENSION_CLUSTER} != '{c}'" for c in settings.clusters)
        alarm("quarantined-messages-other-clusters",
              cw.MathExpression(
                  expression=f"SELECT SUM({names.METRIC_QUARANTINED}) FROM SCHEMA("
                  f"\"{names.METRICS_NAMESPACE}\", {names.DIMENSION_CLUSTER}) WHERE {others}",
                  using_metrics={}, period=five_min),
              threshold=1, comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
              description="The consumer quarantined a message whose group id names no cluster "
              f"of this deployment ({', '.join(settings.clusters)}): an agent whose [cluster] "
              "is not in cdk.json's clusters, or a message without a cluster. Read its "
              "group_id and reason with the Logs Insights query 'quarantined-messages'; see "
              "docs/consumer.md, 'Cluster identity'")

        self.dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=settings.prefix,
            widgets=dashboard_rows(settings=settings, ingest=ingest, analytics=analytics,
                                   lake_bucket=lake_bucket_name(settings),
                                   service=SERVICE_NAME, index_stalled_ms=INDEX_STALLED_MS,
                                   sync_bytes_pending_alarm=settings.sync_bytes_pending_alarm))

        for query_id, query in LOGS_QUERIES.items():
            logs.QueryDefinition(self, f"Query-{query_id}",
                                 query_definition_name=f"{settings.prefix}/{query_id}",
                                 query_string=query, log_groups=[ingest.consumer.log_group])
        for query_id, text in ATTRIBUTION_LOGS_QUERIES.items():
            logs.CfnQueryDefinition(self, f"Query-{query_id.replace('/', '-')}",
                                    name=f"{settings.prefix}/{query_id}", query_string=text,
                                    log_group_names=[analytics.attribution_log_group_name])

        CfnOutput(self, "AlertTopicArn", value=self.topic.topic_arn,
                  description="SNS topic of every alarm: subscribe on-call here")
        CfnOutput(self, "DashboardName", value=settings.prefix,
                  description="CloudWatch dashboard of the pipeline")
        for cluster in settings.clusters:
            CfnOutput(self, f"HeartbeatAlarm{output_suffix(cluster)}",
                      value=f"{settings.prefix}-agent-heartbeat-missing-{cluster}",
                      description=f"Alarm name of the {cluster} agent's heartbeat")
