"""What operators watch: a Prometheus endpoint on the edge node, a heartbeat and a few figures in
CloudWatch (the cloud-side alarm fires when the heartbeat stops), and SNS alerts.

Prometheus values are read at scrape time from callables (the loop's own counters), so the hot
path never touches a metric object. CloudWatch gets one PutMetricData call per interval (at most
1,000 metrics a call; we send six), namespace and dimension from hdfs_events.names.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hdfs_events import names

log = logging.getLogger(__name__)

Reading = Callable[[], float | None]


@dataclass(frozen=True, slots=True)
class AgentReadings:
    """Where each figure comes from; every callable is cheap and thread-safe to call."""

    events_read: Reading
    events_sent: Reading
    send_errors: Reading
    txid_lag: Reading
    seconds_lag: Reading
    checkpoint_txid: Reading
    leader: Reading
    gaps: Reading
    namenode_unavailable: Reading  # 1 while the agent waits for its NameNode, else 0


_PROMETHEUS = {
    # name: (help, counter?)
    "events_read": ("inotify events read from the NameNode", True),
    "events_sent": ("events acknowledged by SQS", True),
    "send_errors": ("SQS send failures (after retries)", True),
    "txid_lag": ("transactions behind the NameNode (getTxidsBehindEstimate)", False),
    "seconds_lag": ("seconds between now and the newest event's NameNode timestamp", False),
    "checkpoint_txid": ("last txid saved as the checkpoint", False),
    "leader": ("1 while this agent holds the lease (or runs without one)", False),
    "gaps": ("inotify gaps: edits purged before they were read", True),
    "namenode_unavailable": ("1 while the NameNode cannot be reached and the agent retries",
                             False),
}


class _ReadingCollector:
    """A prometheus_client collector over AgentReadings (counters and gauges by name)."""

    def __init__(self, prefix: str, cluster: str, readings: AgentReadings) -> None:
        self._prefix, self._cluster, self._readings = prefix, cluster, readings

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for name, (text, counter) in _PROMETHEUS.items():
            value = getattr(self._readings, name)()
            if value is None:
                continue
            family_class = CounterMetricFamily if counter else GaugeMetricFamily
            family = family_class(f"{self._prefix}_{name}", text, labels=["cluster"])
            family.add_metric([self._cluster], float(value))
            yield family


def start_prometheus(cluster: str, readings: AgentReadings, *, port: int,
                     addr: str = "127.0.0.1") -> Any:
    """Serves /metrics on addr:port (port 0 picks a free one); returns the registry and
    server so tests can read and stop them."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    registry.register(_ReadingCollector("hdfs_events_agent", cluster, readings))
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return registry, server, thread


def cloudwatch_datum(cluster: str, name: str, value: float, unit: str = "Count"
                     ) -> dict[str, Any]:
    return {"MetricName": name, "Value": float(value), "Unit": unit,
            "Dimensions": [{"Name": names.DIMENSION_CLUSTER, "Value": cluster}]}


def put_metrics(data: list[dict[str, Any]], client: Any = None) -> None:
    if client is None:
        import boto3

        client = boto3.client("cloudwatch")
    client.put_metric_data(Namespace=names.METRICS_NAMESPACE, MetricData=data)


class Heartbeat:
    """Every `interval_s`: AgentHeartbeat = 1, NameNodeUnavailable (0 or 1), the txid lag, and
    events sent and send errors since the last beat. A failed put is logged and retried at the
    next beat."""

    def __init__(self, cluster: str, readings: AgentReadings, *, interval_s: float,
                 client: Any = None) -> None:
        self.cluster, self._readings, self.interval_s = cluster, readings, interval_s
        self._client = client
        self._stop = threading.Event()
        self._sent_before = self._errors_before = 0.0
        self.beats = 0
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def beat(self) -> None:
        r, c = self._readings, self.cluster
        sent, errors = r.events_sent() or 0.0, r.send_errors() or 0.0
        data = [cloudwatch_datum(c, names.METRIC_AGENT_HEARTBEAT, 1),
                cloudwatch_datum(c, names.METRIC_AGENT_EVENTS_SENT, sent - self._sent_before),
                cloudwatch_datum(c, names.METRIC_AGENT_SEND_ERRORS,
                                 errors - self._errors_before),
                cloudwatch_datum(c, names.METRIC_NAMENODE_UNAVAILABLE,
                                 r.namenode_unavailable() or 0.0)]
        lag = r.txid_lag()
        if lag is not None:
            data.append(cloudwatch_datum(c, names.METRIC_AGENT_LAG_TXIDS, lag))
        try:
            put_metrics(data, self._client)
        except Exception as exc:  # botocore raises many types; the next beat retries
            log.warning("heartbeat: PutMetricData failed: %s", exc)
            return
        self._sent_before, self._errors_before = sent, errors
        self.beats += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()


class Alerts:
    """SNS alerts; without a topic the alert is only the error log line it always writes."""

    def __init__(self, topic_arn: str | None, client: Any = None) -> None:
        self.topic_arn, self._client = topic_arn, client

    def send(self, subject: str, message: str, attributes: Mapping[str, str] | None = None
             ) -> bool:
        log.error("ALERT %s: %s", subject, message)
        if not self.topic_arn:
            return False
        client = self._client
        if client is None:
            import boto3

            client = self._client = boto3.client("sns")
        # SNS subjects: at most 100 ASCII characters, no newlines.
        client.publish(TopicArn=self.topic_arn, Subject=subject[:100], Message=message,
                       MessageAttributes={k: {"DataType": "String", "StringValue": v}
                                          for k, v in (attributes or {}).items()})
        return True


def seconds_since(epoch_ms: int | None, clock: Callable[[], float] = time.time) -> float | None:
    return None if epoch_ms is None else max(0.0, clock() - epoch_ms / 1000)
