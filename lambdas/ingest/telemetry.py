"""Per-invocation metric aggregation, published as CloudWatch EMF through powertools.

Metrics are per cluster (dimension Cluster), events also per type (Cluster, Type). Powertools
always adds a `service` dimension to its primary dimension set, so each document also declares
the bare [Cluster] (or [Cluster, Type]) set that alarms and dashboards use.

Ingest lag: EMF has no percentile statistic of its own; CloudWatch computes p99 from the values
published. An EMF metric takes at most 100 values per document, so an invocation's lags are
reduced to LAG_POINTS evenly spaced quantiles whose last point is the true maximum: Maximum is
exact and p99 is the batch's p99 to within 1/LAG_POINTS of rank.

Records the agent adds: Events counts them like any record (per Type too: SNAPSHOT, GAP), so
Events still equals the lake's row count. They stay out of IngestLagMs: their `timestamp` is the
agent's clock (when a listing began, when a gap was found), not a NameNode change time, and a
snapshot of a million paths would pour a million listing-duration lags into the p99. A GAP is
also counted in StreamGaps and its lost txids in LostTxids, the metrics the gap alarm watches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hdfs_events import names
from hdfs_events.event import EventType, HdfsEvent
from lambdas.ingest.logging_modes import lost_txids
from lambdas.ingest.sequencer import ApplyReport

# 99, not 100: powertools flushes a document by itself when a metric reaches 100 values.
LAG_POINTS = 99
TYPE_DIMENSION = "Type"
# Not Hadoop's: their timestamps are the agent's clock (see the module docstring).
AGENT_RECORD_TYPES = frozenset({EventType.GAP, EventType.SNAPSHOT})


@dataclass(slots=True)
class ClusterTotals:
    messages: int = 0
    events: int = 0
    bytes: int = 0
    quarantined: int = 0
    foreign: int = 0
    gaps: int = 0
    lost_txids: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    lags_ms: list[int] = field(default_factory=list)
    index_wait_ms: int | None = None  # None: no ranges applied this invocation
    index_lag_ms: int | None = None  # None: nothing applied this invocation
    apply_failures: int = 0
    skipped: int = 0
    skipped_events: int = 0
    bridged_ranges: int = 0


@dataclass(slots=True)
class BatchTelemetry:
    clusters: dict[str, ClusterTotals] = field(default_factory=dict)

    def _of(self, cluster: str) -> ClusterTotals:
        return self.clusters.setdefault(cluster, ClusterTotals())

    def message(self, events: Sequence[HdfsEvent], body_bytes: int, now_ms: int) -> None:
        totals = self._of(events[0].cluster)
        totals.messages += 1
        totals.events += len(events)
        totals.bytes += body_bytes
        totals.by_type.update(str(e.type) for e in events)
        totals.lags_ms.extend(now_ms - e.timestamp for e in events
                              if e.timestamp is not None and e.type not in AGENT_RECORD_TYPES)
        for gap in (e for e in events if e.type == EventType.GAP):
            totals.gaps += 1
            totals.lost_txids += lost_txids(gap)

    def quarantined(self, cluster: str) -> None:
        self._of(cluster).quarantined += 1

    def foreign_sender(self, cluster: str) -> None:
        self._of(cluster).foreign += 1

    def applied(self, cluster: str, report: ApplyReport, now_ms: int) -> None:
        totals = self._of(cluster)
        since = report.waiting_since_ms
        wait = 0 if since is None else max(0, now_ms - since)
        totals.index_wait_ms = max(totals.index_wait_ms or 0, wait)
        totals.skipped += report.skipped_messages
        totals.skipped_events += len(report.skipped_events)
        totals.bridged_ranges += len(report.bridged)
        if report.applied_timestamp_ms is not None:
            lag = max(0, now_ms - report.applied_timestamp_ms)
            totals.index_lag_ms = max(totals.index_lag_ms or 0, lag)

    def apply_failed(self, cluster: str) -> None:
        self._of(cluster).apply_failures += 1

    def emit(self, metrics: Any) -> None:
        """Publishes and resets. `metrics` is a powertools Metrics (the handler's singleton)."""
        for cluster, t in sorted(self.clusters.items()):
            metrics.add_dimension(names.DIMENSION_CLUSTER, cluster)
            if metrics.service:
                metrics.add_dimensions(**{names.DIMENSION_CLUSTER: cluster})
            metrics.add_metric(names.METRIC_MESSAGES, "Count", t.messages)
            metrics.add_metric(names.METRIC_EVENTS, "Count", t.events)
            metrics.add_metric(names.METRIC_BYTES, "Bytes", t.bytes)
            metrics.add_metric(names.METRIC_QUARANTINED, "Count", t.quarantined)
            metrics.add_metric(names.METRIC_FOREIGN_SENDER, "Count", t.foreign)
            metrics.add_metric(names.METRIC_STREAM_GAPS, "Count", t.gaps)
            metrics.add_metric(names.METRIC_LOST_TXIDS, "Count", t.lost_txids)
            metrics.add_metric(names.METRIC_INDEX_APPLY_FAILURES, "Count", t.apply_failures)
            metrics.add_metric(names.METRIC_INDEX_SKIPPED, "Count", t.skipped)
            metrics.add_metric(names.METRIC_INDEX_SKIPPED_EVENTS, "Count", t.skipped_events)
            metrics.add_metric(names.METRIC_INDEX_BRIDGED_RANGES, "Count", t.bridged_ranges)
            if t.index_wait_ms is not None:
                metrics.add_metric(names.METRIC_INDEX_WAIT_MS, "Milliseconds", t.index_wait_ms)
            if t.index_lag_ms is not None:
                metrics.add_metric(names.METRIC_INDEX_LAG_MS, "Milliseconds", t.index_lag_ms)
            for lag in lag_points(t.lags_ms):
                metrics.add_metric(names.METRIC_INGEST_LAG_MS, "Milliseconds", lag)
            metrics.flush_metrics()
            for type_, count in sorted(t.by_type.items()):
                dims = {names.DIMENSION_CLUSTER: cluster, TYPE_DIMENSION: type_}
                for name, value in dims.items():
                    metrics.add_dimension(name, value)
                if metrics.service:
                    metrics.add_dimensions(**dims)
                metrics.add_metric(names.METRIC_EVENTS, "Count", count)
                metrics.flush_metrics()
        self.clusters.clear()


def lag_points(lags: Sequence[int]) -> list[int]:
    if len(lags) <= LAG_POINTS:
        return list(lags)
    ordered = sorted(lags)
    n = len(ordered)
    return [ordered[min(n - 1, -(-(i * n) // LAG_POINTS) - 1)] for i in range(1, LAG_POINTS + 1)]
