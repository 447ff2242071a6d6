"""Tells the world how a request ended: an SNS message (the configured topic and the request's
own, if allowed), a CloudWatch metric names.METRIC_COPY_OUTCOME by outcome, and a log line.

Publishing is best effort: the transfers table already holds the outcome, so a failed
notification is logged with its reason and does not undo or repeat a finished copy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hdfs_events import names

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    request_id: str
    state: str  # verified | failed | rejected
    reason: str | None = None
    source: str | None = None
    destination: str | None = None
    attempts: int | None = None
    bytes: int | None = None
    files: int | None = None
    duration_ms: int | None = None
    final: bool = True

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None},
                          ensure_ascii=False, separators=(",", ":"))


class OutcomePublisher:
    def __init__(self, *, sns: Any, cloudwatch: Any, cluster: str) -> None:
        self._sns = sns
        self._cloudwatch = cloudwatch
        self._cluster = cluster

    def publish(self, outcome: Outcome, topics: Iterable[str]) -> None:
        log.info("copy outcome %s", outcome.to_json())
        for topic in dict.fromkeys(topics):  # once per topic, in order
            try:
                self._sns.publish(
                    TopicArn=topic, Message=outcome.to_json(),
                    Subject=f"copy {outcome.state}: {outcome.request_id}"[:100],
                    MessageAttributes={
                        "state": {"DataType": "String", "StringValue": outcome.state},
                        "request_id": {"DataType": "String",
                                       "StringValue": outcome.request_id}})
            except (ClientError, BotoCoreError) as exc:
                log.error("copy %s: could not notify %s: %s", outcome.request_id, topic, exc)
        dimensions = [{"Name": "Outcome", "Value": outcome.state},
                      {"Name": names.DIMENSION_CLUSTER, "Value": self._cluster}]
        try:
            self._cloudwatch.put_metric_data(Namespace=names.METRICS_NAMESPACE, MetricData=[{
                "MetricName": names.METRIC_COPY_OUTCOME, "Dimensions": dimensions,
                "Value": 1, "Unit": "Count"}])
        except (ClientError, BotoCoreError) as exc:
            log.error("copy %s: could not put metric: %s", outcome.request_id, exc)
