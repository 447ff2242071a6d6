"""The monitoring stack's alarms: each named after the stack's prefix, each paging the alert
topic when it fires and again when it clears."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions

from hdfs_events import names


def cluster_metric(metric_name: str, cluster: str, statistic: str,
                   period: Duration | None = None) -> cw.Metric:
    """One of our metrics by the bare [Cluster] dimension set, which the agent publishes and the
    consumer's EMF declares beside powertools' [service, Cluster] (lambdas/ingest/telemetry.py);
    5-minute periods unless given."""
    return cw.Metric(namespace=names.METRICS_NAMESPACE, metric_name=metric_name,
                     dimensions_map={names.DIMENSION_CLUSTER: cluster},
                     statistic=statistic, period=period or Duration.minutes(5))


class Alarms:
    """Not a Construct: each alarm's scope is the stack itself, so its CloudFormation logical
    ID stays what it was when the stack built them inline (a new ID would replace every alarm
    on the next deploy, resetting its state and history)."""

    def __init__(self, stack: Stack, *, prefix: str, action: cw_actions.SnsAction) -> None:
        self._stack = stack
        self._prefix = prefix
        self._action = action
        self.all: list[cw.Alarm] = []

    def add(self, alarm_id: str, metric: cw.IMetric, *, threshold: float, description: str,
            comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            periods: int = 1, datapoints: int | None = None,
            missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING) -> None:
        alarm = cw.Alarm(self._stack, alarm_id, alarm_name=f"{self._prefix}-{alarm_id}",
                         alarm_description=description, metric=metric, threshold=threshold,
                         comparison_operator=comparison, evaluation_periods=periods,
                         datapoints_to_alarm=datapoints, treat_missing_data=missing)
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.all.append(alarm)

    def on_any(self, alarm_id: str, metric: cw.IMetric, *, description: str, periods: int = 1,
               datapoints: int | None = None) -> None:
        """An alarm that fires on one occurrence: each counts (a lost event, a quarantined
        message), so one pages."""
        self.add(alarm_id, metric, threshold=1,
                 comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                 periods=periods, datapoints=datapoints, description=description)
