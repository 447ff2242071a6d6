"""What the consumer logs per message, by EVENT_LOG_MODE, to bound CloudWatch Logs cost.

- all: one JSON line per HDFS event (cluster, txid, index, type, path, dst_path, ...), so
  Logs Insights can answer "who touched /x" directly.
- mutations: the same without METADATA TIMES (access-time updates dominate busy clusters and
  change nothing a reader of the namespace cares about).
- summary: one line per message (counts by type, first and last txid).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from hdfs_events.event import EventType, HdfsEvent, MetadataType


def event_fields(event: HdfsEvent) -> dict[str, Any]:
    fields: dict[str, Any] = {"cluster": event.cluster, "txid": event.txid,
                              "index": event.index, "type": str(event.type),
                              "path": event.path, "dst_path": event.dst_path}
    if event.metadata_type is not None:
        fields["metadata_type"] = str(event.metadata_type)
    if event.inode_type is not None:
        fields["inode_type"] = str(event.inode_type)
    if event.size is not None:
        fields["size"] = event.size
    return fields


def is_mutation(event: HdfsEvent) -> bool:
    return not (event.type == EventType.METADATA
                and event.metadata_type == MetadataType.TIMES)


def log_records(events: Sequence[HdfsEvent], mode: str, *,
                message_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(message, fields) pairs to log for one message's events under `mode`."""
    if mode == "summary":
        counts = Counter(str(e.type) for e in events)
        yield "hdfs events", {
            "cluster": events[0].cluster, "message_id": message_id, "events": len(events),
            "first_txid": events[0].txid, "last_txid": events[-1].txid,
            "types": dict(sorted(counts.items())),
        }
        return
    for event in events:
        if mode == "all" or is_mutation(event):
            yield "hdfs event", event_fields(event)
