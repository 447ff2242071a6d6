"""The dashboard's rows: stream in, queue health, consumer, agents, gaps, namespace index, sync,
audit, Glue, lake."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw

from hdfs_events import names
from stacks.settings import DeploySettings

if TYPE_CHECKING:
    from stacks.analytics import AnalyticsStack
    from stacks.ingest import IngestStack

FIVE_MIN = Duration.minutes(5)


def _emf(metric_name: str, statistic: str, label: str) -> cw.MathExpression:
    # The consumer's EMF metrics carry powertools' `service` dimension plus, for some, a `Type`
    # dimension; SEARCH sums whatever dimension sets exist instead of guessing one.
    return cw.MathExpression(
        expression=f"SEARCH('{{{names.METRICS_NAMESPACE},service}} "
                   f"MetricName=\"{metric_name}\"', '{statistic}', 300)",
        label=label, period=FIVE_MIN, using_metrics={})


def _agent(metric_name: str, cluster: str, statistic: str) -> cw.Metric:
    return cw.Metric(namespace=names.METRICS_NAMESPACE, metric_name=metric_name,
                     dimensions_map={names.DIMENSION_CLUSTER: cluster}, statistic=statistic,
                     period=Duration.minutes(1), label=cluster)


def _consumer(metric_name: str, cluster: str, statistic: str, **dims: str) -> cw.Metric:
    """A consumer EMF metric by its bare [Cluster] (or [Cluster, Type]) dimension set."""
    return cw.Metric(namespace=names.METRICS_NAMESPACE, metric_name=metric_name,
                     dimensions_map={names.DIMENSION_CLUSTER: cluster, **dims},
                     statistic=statistic, period=FIVE_MIN, label=cluster)


def denied_access_total(cluster: str) -> cw.MathExpression:
    """Every denial of a cluster, 5-minute sums. `audit run` sends DeniedAccess twice per
    denial, by [Cluster, Command] and by [Cluster, User] (onprem_agent/audit/metrics.py), never
    by [Cluster] alone: a metric on [Cluster] would match nothing, and both sets together would
    count each denial twice. Commands are a bounded set, so their series add up to the total.
    Cluster names are [A-Za-z0-9_.-] (hdfs_events/ids.py): nothing to escape in the quotes."""
    return cw.MathExpression(
        expression=f"SELECT SUM({names.METRIC_DENIED_ACCESS}) FROM SCHEMA("
                   f"\"{names.METRICS_NAMESPACE}\", {names.DIMENSION_CLUSTER}, "
                   f"{names.DIMENSION_COMMAND}) WHERE {names.DIMENSION_CLUSTER} = '{cluster}'",
        label=f"{cluster} all commands", period=FIVE_MIN, using_metrics={})


def _denied_by(dimension: str, cluster: str) -> cw.MathExpression:
    """One series per value of `dimension` (a command, or one of the interval's top users)."""
    return cw.MathExpression(
        expression=f"SEARCH('{{{names.METRICS_NAMESPACE},{names.DIMENSION_CLUSTER},{dimension}}} "
                   f"MetricName=\"{names.METRIC_DENIED_ACCESS}\" "
                   f"{names.DIMENSION_CLUSTER}=\"{cluster}\"', 'Sum', 300)",
        label=f"{cluster} ${{PROP('Dim.{dimension}')}}", period=FIVE_MIN, using_metrics={})


def _glue(job_name: str, metric_name: str) -> cw.Metric:
    return cw.Metric(namespace="Glue", metric_name=metric_name,
                     dimensions_map={"JobName": job_name, "JobRunId": "ALL", "Type": "count"},
                     statistic="Maximum", period=FIVE_MIN, label=job_name)


def dashboard_rows(*, settings: DeploySettings, ingest: IngestStack, analytics: AnalyticsStack,
                   lake_bucket: str, service: str,
                   index_stalled_ms: int,
                   sync_bytes_pending_alarm: int) -> list[list[cw.IWidget]]:
    events = ingest.events
    fn = ingest.consumer.function
    clusters = settings.clusters
    jobs = analytics.jobs
    width = 8
    return [
        [
            cw.GraphWidget(title="Events in (by type)", width=width,
                           left=[_emf(names.METRIC_EVENTS, "Sum", "events")]),
            cw.GraphWidget(title="Messages and bytes", width=width,
                           left=[_emf(names.METRIC_MESSAGES, "Sum", "messages"),
                                 events.queue.metric_number_of_messages_sent(period=FIVE_MIN)],
                           right=[_emf(names.METRIC_BYTES, "Sum", "bytes")]),
            cw.GraphWidget(title="Ingest lag (ms, NameNode -> consumer)", width=width,
                           left=[_emf(names.METRIC_INGEST_LAG_MS, "p99", "p99"),
                                 _emf(names.METRIC_INGEST_LAG_MS, "Maximum", "max")]),
        ],
        [
            cw.GraphWidget(title="Age of oldest message (s)", width=width,
                           left=[events.queue.metric_approximate_age_of_oldest_message(
                               period=FIVE_MIN, statistic="Maximum")],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=settings.oldest_message_alarm_seconds, label="alarm")]),
            cw.GraphWidget(title="DLQ depth", width=width,
                           left=[events.dlq.metric_approximate_number_of_messages_visible(
                                     period=FIVE_MIN, statistic="Maximum", label="events DLQ"),
                                 *(copy.dlq.metric_approximate_number_of_messages_visible(
                                     period=FIVE_MIN, statistic="Maximum",
                                     label=f"copy DLQ {cluster}")
                                   for cluster, copy in ingest.copy_requests.items())]),
            cw.GraphWidget(title="Quarantined messages", width=width,
                           left=[_emf(names.METRIC_QUARANTINED, "Sum", "quarantined")]),
        ],
        [
            cw.GraphWidget(title="Consumer errors and throttles", width=width,
                           left=[fn.metric_errors(period=FIVE_MIN, statistic="Sum"),
                                 fn.metric_throttles(period=FIVE_MIN, statistic="Sum")]),
            cw.GraphWidget(title="Consumer duration (ms)", width=width,
                           left=[fn.metric_duration(period=FIVE_MIN, statistic="p99",
                                                    label="p99"),
                                 fn.metric_duration(period=FIVE_MIN, statistic="Maximum",
                                                    label="max")]),
            cw.GraphWidget(title="Consumer concurrency", width=width,
                           left=[fn.metric("ConcurrentExecutions", period=FIVE_MIN,
                                           statistic="Maximum")],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=settings.consumer_max_concurrency, label="max")]),
        ],
        [
            cw.GraphWidget(title="Agent lag (txids behind the NameNode)", width=width,
                           left=[_agent(names.METRIC_AGENT_LAG_TXIDS, c, "Maximum")
                                 for c in clusters]),
            cw.GraphWidget(title="Agent heartbeat", width=width,
                           left=[_agent(names.METRIC_AGENT_HEARTBEAT, c, "SampleCount")
                                 for c in clusters]),
            cw.GraphWidget(title="Agent events sent and send errors", width=width,
                           left=[_agent(names.METRIC_AGENT_EVENTS_SENT, c, "Sum")
                                 for c in clusters],
                           right=[_agent(names.METRIC_AGENT_SEND_ERRORS, c, "Sum")
                                  for c in clusters]),
        ],
        [
            cw.GraphWidget(title="Inotify gaps: GAP records (consumer), reports (agent); "
                                 "lost txids", width=12,
                           left=[m for c in clusters for m in (
                               _consumer(names.METRIC_STREAM_GAPS, c, "Sum")
                               .with_(label=f"{c} GAP records"),
                               _agent(names.METRIC_INOTIFY_GAP, c, "SampleCount")
                               .with_(label=f"{c} agent reports", period=FIVE_MIN))],
                           right=[_consumer(names.METRIC_LOST_TXIDS, c, "Sum")
                                  .with_(label=f"{c} lost txids") for c in clusters],
                           left_annotations=[cw.HorizontalAnnotation(value=1, label="alarm")]),
            cw.GraphWidget(title="SNAPSHOT records (namespace listed after a gap)", width=12,
                           left=[_consumer(names.METRIC_EVENTS, c, "Sum", Type="SNAPSHOT")
                                 for c in clusters]),
        ],
        [
            cw.GraphWidget(title="Namespace index: wait of the next txid range (ms)",
                           width=width,
                           left=[_consumer(names.METRIC_INDEX_WAIT_MS, c, "Maximum")
                                 for c in clusters],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=index_stalled_ms, label="alarm")]),
            cw.GraphWidget(title="Namespace index: apply failures", width=width,
                           left=[_consumer(names.METRIC_INDEX_APPLY_FAILURES, c, "Sum")
                                 for c in clusters],
                           left_annotations=[cw.HorizontalAnnotation(value=1, label="alarm")]),
            cw.GraphWidget(title="Namespace index: quarantined messages a range went on without",
                           width=width,
                           left=[_consumer(names.METRIC_INDEX_SKIPPED, c, "Sum")
                                 for c in clusters]),
        ],
        [  # four to the row: the lag in seconds and in bytes side by side
            cw.GraphWidget(title="Sync lag (s, NameNode -> replicated)", width=6,
                           left=[_agent(names.METRIC_SYNC_LAG_SECONDS, c, "Maximum")
                                 for c in clusters]),
            cw.GraphWidget(title="Sync lag (bytes still to copy)", width=6,
                           left=[_agent(names.METRIC_SYNC_BYTES_PENDING, c, "Maximum")
                                 for c in clusters],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=sync_bytes_pending_alarm, label="alarm")]),
            # S3 requests botocore sent again (SlowDown, 5xx) beside the bytes: a throttled
            # prefix shows as retries up and bytes down in the same minutes.
            cw.GraphWidget(title="Sync bytes replicated (left), S3 requests retried (right)",
                           width=6,
                           left=[_agent(names.METRIC_SYNC_BYTES, c, "Sum") for c in clusters],
                           right=[_agent(names.METRIC_SYNC_S3_RETRIES, c, "Sum")
                                  for c in clusters]),
            cw.GraphWidget(title="Sync parked paths", width=6,
                           left=[_agent(names.METRIC_SYNC_PARKED, c, "Maximum")
                                 for c in clusters]),
        ],
        [  # `audit run` on the NameNode hosts (docs/agent.md, "Audit log")
            cw.GraphWidget(title="Audit: denied accesses by command", width=6,
                           left=[m for c in clusters for m in (
                               denied_access_total(c),
                               _denied_by(names.DIMENSION_COMMAND, c))],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=settings.denied_access_alarm,
                               label="alarm (all commands)")]),
            cw.GraphWidget(title="Audit: denied accesses by user (an interval's top 10, the "
                                 "rest (other))", width=6,
                           left=[_denied_by(names.DIMENSION_USER, c) for c in clusters]),
            cw.GraphWidget(title="Audit lines shipped; unparsed (right)", width=6,
                           left=[_agent(names.METRIC_AUDIT_LINES_SHIPPED, c, "Sum")
                                 .with_(period=FIVE_MIN) for c in clusters],
                           right=[_agent(names.METRIC_AUDIT_LINES_UNPARSED, c, "Sum")
                                  .with_(period=FIVE_MIN, label=f"{c} unparsed")
                                  for c in clusters]),
            cw.GraphWidget(title="Audit lag (s, NameNode log -> lake)", width=6,
                           left=[_agent(names.METRIC_AUDIT_LAG_SECONDS, c, "Minimum")
                                 .with_(period=FIVE_MIN) for c in clusters],
                           left_annotations=[cw.HorizontalAnnotation(
                               value=settings.audit_lag_alarm_seconds, label="alarm")]),
        ],
        [
            cw.GraphWidget(title="Glue job outcome (runs)", width=width,
                           left=[m for job in jobs for m in (
                               job.metric_success(period=Duration.hours(1), statistic="Sum",
                                                  label=f"{job.node.id} ok"),
                               job.metric_failure(period=Duration.hours(1), statistic="Sum",
                                                  label=f"{job.node.id} failed"))]),
            cw.GraphWidget(title="Glue job duration (ms)", width=width,
                           left=[_glue(name, "glue.driver.aggregate.elapsedTime")
                                 for name in analytics.job_names.values()]),
            cw.GraphWidget(title="Lake size (bytes, daily)", width=width,
                           left=[cw.Metric(namespace="AWS/S3", metric_name="BucketSizeBytes",
                                           dimensions_map={"BucketName": lake_bucket,
                                                           "StorageType": "StandardStorage"},
                                           statistic="Average", period=Duration.days(1))]),
        ],
    ]
