"""Raw objects written as the consumer Lambda (lambdas/ingest/lake.py) writes them: gzip JSON
lines of canonical events (HdfsEvent.to_json) under raw/cluster=<c>/dt=<d>/hour=<HH>/<name>.jsonl.gz,
partitioned by the event's NameNode timestamp; an event without one goes with the largest
timestamp of its message, or the message's SentTimestamp when no event has one."""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from hdfs_events.event import HdfsEvent
from hdfs_events.names import RAW_PREFIX

JAN_13_2015_MS = 1421107200000  # 2015-01-13T00:00:00Z, the day of the sample edit log


def partition_of(ms: int) -> tuple[str, str]:
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return t.strftime("%Y-%m-%d"), t.strftime("%H")


class RawLake:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.uri = root.resolve().as_uri()

    def write_message(self, name: str, events: Sequence[HdfsEvent], *, sent_ms: int) -> list[Path]:
        """One SQS message's events: one object per (dt, hour) they fall in, as the consumer
        splits a message whose events straddle an hour."""
        groups: dict[tuple[str, str, str], list[str]] = {}
        stamps = [e.timestamp for e in events if e.timestamp is not None]
        fallback = max(stamps) if stamps else sent_ms
        for e in events:
            dt, hour = partition_of(e.timestamp if e.timestamp is not None else fallback)
            groups.setdefault((e.cluster, dt, hour), []).append(e.to_json())
        return [self.write_lines(c, dt, hour, name, lines)
                for (c, dt, hour), lines in groups.items()]

    def write_lines(self, cluster: str, dt: str, hour: str, name: str,
                    lines: Iterable[str]) -> Path:
        data = "".join(f"{line}\n" for line in lines).encode()
        return self.write_bytes(cluster, dt, hour, name, gzip.compress(data, mtime=0))

    def write_bytes(self, cluster: str, dt: str, hour: str, name: str, data: bytes) -> Path:
        path = self.root / RAW_PREFIX / f"cluster={cluster}" / f"dt={dt}" / f"hour={hour}" \
            / f"{name}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path
