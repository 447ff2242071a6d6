"""What `audit run` tells CloudWatch, once per interval: AuditLinesShipped, AuditLinesUnparsed,
AuditLagSeconds and DeniedAccess (names in hdfs_events.names).

DeniedAccess is sent by command (a bounded set: FSNamesystem's operations) and by user for the
users with the most denials in the interval only, the rest as User "(other)": CloudWatch bills
every metric name + dimension combination as a custom metric, and users are unbounded (a
scanner trying names, a misconfigured job per user).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from hdfs_events import names
from hdfs_events.audit import AuditRecord
from onprem_agent.opsmetrics import cloudwatch_datum, put_metrics

log = logging.getLogger(__name__)

TOP_DENIED_USERS = 10
OTHER_USERS = "(other)"


class AuditCounters:
    """Counts since the last publish; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.shipped = self.unparsed = 0
        self.denied_by_command: Counter[str] = Counter()
        self.denied_by_user: Counter[str] = Counter()
        self.last_line_ms: int | None = None
        self.total_shipped = self.total_unparsed = 0

    def count(self, records: Iterable[AuditRecord]) -> None:
        with self._lock:
            for r in records:
                self.shipped += 1
                self.total_shipped += 1
                if r.reason is not None:
                    self.unparsed += 1
                    self.total_unparsed += 1
                    continue
                if r.time is not None:
                    self.last_line_ms = max(self.last_line_ms or 0, r.time)
                if r.allowed is False:
                    self.denied_by_command[r.cmd or ""] += 1
                    self.denied_by_user[r.user or ""] += 1

    def data(self, cluster: str, now_s: float) -> list[dict[str, Any]]:
        """The interval's figures as PutMetricData entries."""
        with self._lock:
            data = [cloudwatch_datum(cluster, names.METRIC_AUDIT_LINES_SHIPPED, self.shipped),
                    cloudwatch_datum(cluster, names.METRIC_AUDIT_LINES_UNPARSED, self.unparsed)]
            if self.last_line_ms is not None:
                data.append(cloudwatch_datum(
                    cluster, names.METRIC_AUDIT_LAG_SECONDS,
                    max(0.0, now_s - self.last_line_ms / 1000), unit="Seconds"))
            for command, n in sorted(self.denied_by_command.items()):
                data.append(_denied(cluster, names.DIMENSION_COMMAND, command, n))
            top = self.denied_by_user.most_common(TOP_DENIED_USERS)
            rest = sum(self.denied_by_user.values()) - sum(n for _, n in top)
            data += [_denied(cluster, names.DIMENSION_USER, user, n) for user, n in top]
            if rest:
                data.append(_denied(cluster, names.DIMENSION_USER, OTHER_USERS, rest))
            return data

    def reset(self) -> None:
        with self._lock:
            self.shipped = self.unparsed = 0
            self.denied_by_command.clear()
            self.denied_by_user.clear()


def _denied(cluster: str, name: str, value: str, n: int) -> dict[str, Any]:
    datum = cloudwatch_datum(cluster, names.METRIC_DENIED_ACCESS, n)
    datum["Dimensions"].append({"Name": name, "Value": value or "(none)"})
    return datum


class AuditMetricsPublisher:
    """Publishes every `interval_s` when called (from the shipping loop, no thread of its own);
    a failed put keeps the counts for the next one."""

    def __init__(self, cluster: str, counters: AuditCounters, *, interval_s: float,
                 client: Any = None, clock: Callable[[], float] = time.time) -> None:
        self.cluster, self.counters, self.interval_s = cluster, counters, interval_s
        self._client, self._clock = client, clock
        self._last = clock()

    def __call__(self) -> None:
        now = self._clock()
        if self.interval_s <= 0 or now - self._last < self.interval_s:
            return
        self.put_now(now)

    def put_now(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        self._last = now
        try:
            put_metrics(self.counters.data(self.cluster, now), self._client)
        except Exception as exc:  # botocore raises many types; the next interval retries
            log.warning("audit: PutMetricData failed: %s", exc)
            return
        self.counters.reset()
