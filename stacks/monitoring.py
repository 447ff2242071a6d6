"""Monitoring: the alert topic, alarms on every way the pipeline can stall or lose its way, one
dashboard, and saved Logs Insights queries over the consumer's per-event log lines and the
attribution job's who-made-it lines."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_logs as logs
from constructs import Construct

from stacks.agent_alarms import add_cluster_agent_alarms
from stacks.alarms import Alarms
from stacks.alert_topic import AlertTopic
from stacks.analytics import AnalyticsStack
from stacks.consumer_alarms import INDEX_STALLED_MS, add_cluster_consumer_alarms
from stacks.ingest import IngestStack
from stacks.ingest_function import SERVICE_NAME
from stacks.onprem_principal import output_suffix
from stacks.pipeline_alarms import add_pipeline_alarms
from stacks.saved_queries import add_raw_saved_queries, add_saved_queries
from stacks.settings import DeploySettings
from stacks.storage import StorageStack, lake_bucket_name, removal_policy
from stacks.widgets import dashboard_rows

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


class MonitoringStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 storage: StorageStack, ingest: IngestStack, analytics: AnalyticsStack,
                 **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        alerts = AlertTopic(self, settings=settings, removal=removal_policy(settings),
                            principals=ingest.principals)
        self.topic = alerts.topic

        alarms = Alarms(self, prefix=settings.prefix, action=alerts.action)
        add_pipeline_alarms(alarms, settings=settings, ingest=ingest, analytics=analytics)
        for cluster in settings.clusters:
            add_cluster_agent_alarms(alarms, cluster=cluster, settings=settings)
            add_cluster_consumer_alarms(alarms, cluster=cluster)
        self.alarms = alarms.all

        self.dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=settings.prefix,
            widgets=dashboard_rows(settings=settings, ingest=ingest, analytics=analytics,
                                   lake_bucket=lake_bucket_name(settings),
                                   service=SERVICE_NAME, index_stalled_ms=INDEX_STALLED_MS,
                                   sync_bytes_pending_alarm=settings.sync_bytes_pending_alarm))

        add_saved_queries(self, prefix=settings.prefix, log_group=ingest.consumer.log_group,
                          queries=LOGS_QUERIES)
        add_raw_saved_queries(self, prefix=settings.prefix,
                              log_group_name=analytics.attribution_log_group_name,
                              queries=ATTRIBUTION_LOGS_QUERIES)

        CfnOutput(self, "AlertTopicArn", value=self.topic.topic_arn,
                  description="SNS topic of every alarm: subscribe on-call here")
        CfnOutput(self, "DashboardName", value=settings.prefix,
                  description="CloudWatch dashboard of the pipeline")
        for cluster in settings.clusters:
            CfnOutput(self, f"HeartbeatAlarm{output_suffix(cluster)}",
                      value=f"{settings.prefix}-agent-heartbeat-missing-{cluster}",
                      description=f"Alarm name of the {cluster} agent's heartbeat")
