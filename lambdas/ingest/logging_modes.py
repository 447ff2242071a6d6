"""What the consumer logs per message, by EVENT_LOG_MODE, to bound CloudWatch Logs cost.

- all: one JSON line per HDFS event (cluster, txid, index, type, path, dst_path, ...), so
  Logs Insights can answer "who touched /x" directly.
- mutations: the same without METADATA TIMES (access-time updates dominate busy clusters and
  change nothing a reader of the namespace cares about).
- summary: one line per message (counts by type, first and last txid).

Records the agent adds (hdfs_events.event, "GAP and SNAPSHOT"):
- GAP: one ERROR line in every mode (gap_lines), never an INFO "hdfs event" line as well: it is
  the one record a platform team must not miss (edits were purged before anyone read them), and
  it is rare, so it costs nothing to keep even in `summary`.
- SNAPSHOT: logged like any event in `all` and `mutations` (it is the state of a path, which is
  what `mutations` keeps), counted by type in `summary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from hdfs_events.event import EventType, HdfsEvent, MetadataType

GAP_MESSAGE = "inotify gap: edits purged before the agent read them"


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


def gap_lines(events: Sequence[HdfsEvent], *,
              message_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(message, fields) of the ERROR line of each GAP record, whatever the log mode."""
    for event in events:
        if event.type != EventType.GAP:
            continue
        yield GAP_MESSAGE, {
            **event_fields(event), "gap_end_txid": event.gap_end_txid,
            "lost_txids": lost_txids(event),
            "detected_ms": event.timestamp,  # agent clock: when the agent found the gap
            "message_id": message_id,
        }


def lost_txids(gap: HdfsEvent) -> int:
    """Txids txid .. gap_end_txid-1; 0 for a GAP without an end (HdfsEvent.from_dict refuses
    one, so only a hand-built record can lack it)."""
    return max(0, (gap.gap_end_txid or gap.txid) - gap.txid)


def log_records(events: Sequence[HdfsEvent], mode: str, *,
                message_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(message, fields) pairs to log at INFO for one message's events under `mode`."""
    if mode == "summary":
        counts = Counter(str(e.type) for e in events)
        yield "hdfs events", {
            "cluster": events[0].cluster, "message_id": message_id, "events": len(events),
            "first_txid": events[0].txid, "last_txid": events[-1].txid,
            "types": dict(sorted(counts.items())),
        }
        return
    for event in events:
        if event.type == EventType.GAP:
            continue  # its ERROR line (gap_lines) is its line
        if mode == "all" or is_mutation(event):
            yield "hdfs event", event_fields(event)
