"""Monitoring: the alert topic, alarms on every way the pipeline can stall or lose its way, one
dashboard, and saved Logs Insights queries over the consumer's per-event log lines and the
attribution job's who-made-it lines."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_cloudwatch as cw
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
from stacks.saved_queries import (
    ATTRIBUTION_LOGS_QUERIES,
    LOGS_QUERIES,
    add_raw_saved_queries,
    add_saved_queries,
)
from stacks.settings import DeploySettings
from stacks.storage import StorageStack, lake_bucket_name, removal_policy
from stacks.widgets import dashboard_rows


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
