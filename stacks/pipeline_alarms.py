"""Alarms on the pipeline as a whole: the queues, the consumer function, the Glue jobs, and
messages of clusters this deployment does not know."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw

from hdfs_events import names
from stacks.alarms import Alarms
from stacks.analytics import AnalyticsStack
from stacks.ingest import IngestStack
from stacks.settings import DeploySettings


def add_pipeline_alarms(alarms: Alarms, *, settings: DeploySettings, ingest: IngestStack,
                        analytics: AnalyticsStack) -> None:
    alarm = alarms.add
    events = ingest.events
    fn = ingest.consumer.function
    five_min = Duration.minutes(5)
    alarm("event-dlq-not-empty",
          events.dlq.metric_approximate_number_of_messages_visible(
              period=five_min, statistic="Maximum"),
          threshold=0, description="Event messages failed max_receive_count times (the "
          "consumer raised on them; a bad message is quarantined instead): read the "
          "consumer's ERROR lines, fix the cause, then redrive the DLQ to the event queue "
          "(docs/deploy.md, 'When an index alarm fires')")
    alarm("apply-dlq-not-empty",
          ingest.apply.dlq.metric_approximate_number_of_messages_visible(
              period=five_min, statistic="Maximum"),
          threshold=0, description="Continue requests failed max_receive_count times: "
          "invocations applying the index's ranges crashed or timed out. Read the consumer's "
          "ERROR lines; the next event message sends a new request (docs/deploy.md, 'When an "
          "index alarm fires')")
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
        alarms.on_any(f"glue-{job.node.id}-failed",
                      job.metric_failure(period=Duration.hours(1), statistic="Sum"),
                      description=f"Glue job {job.node.id} failed or timed out")

    # A message whose group id names no cluster of this deployment (an agent with a
    # misspelt [cluster], a group id without one: the consumer counts those under
    # "unknown") is quarantined under that name, which no per-cluster alarm watches. A
    # Metrics Insights query sums the [Cluster] series of every other name. Cluster names
    # are [A-Za-z0-9_.-] (hdfs_events/ids.py): nothing to escape in the quotes.
    others = " AND ".join(f"{names.DIMENSION_CLUSTER} != '{c}'" for c in settings.clusters)
    alarms.on_any(
        "quarantined-messages-other-clusters",
        cw.MathExpression(
            expression=f"SELECT SUM({names.METRIC_QUARANTINED}) FROM SCHEMA("
            f"\"{names.METRICS_NAMESPACE}\", {names.DIMENSION_CLUSTER}) WHERE {others}",
            using_metrics={}, period=five_min),
        description="The consumer quarantined a message whose group id names no cluster "
        f"of this deployment ({', '.join(settings.clusters)}): an agent whose [cluster] "
        "is not in cdk.json's clusters, or a message without a cluster. Read its "
        "group_id and reason with the Logs Insights query 'quarantined-messages'; see "
        "docs/consumer.md, 'Cluster identity'")
