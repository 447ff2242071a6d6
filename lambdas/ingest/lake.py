"""The raw lake: each message's events as gzip JSON lines, partitioned by NameNode time.

One object per message and hour, at hdfs_events.lake_layout.raw_key (cluster, UTC day and hour,
and a name made from the message's deduplication id).

The object name comes from the MessageDeduplicationId and the partition from times inside the
message, never from the clock at receive time, so a redelivered message lands on the very same
key and overwrites its first copy. Partition time of an event, in order of preference:
1. its own NameNode timestamp (CREATE, CLOSE, RENAME, UNLINK, TRUNCATE carry one);
2. the largest timestamp among the message's other events (APPEND and METADATA carry none in
   Hadoop, and sit next to timestamped events in the same transaction range);
3. the message's SentTimestamp SQS attribute (fixed when the agent sent it, the same on every
   redelivery).
A message whose events span several hours becomes one object per hour, with the same name.

A message of a newer minor (docs/contract.md, "Versions") keeps what this consumer does not know:
the events' unknown fields in their lines, the envelope's as each object's S3 user metadata
`envelope-fields` (ASCII JSON).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hdfs_events.envelope import unknown_envelope_json
from hdfs_events.event import HdfsEvent
from hdfs_events.ids import deduplication_id
from hdfs_events.lake_layout import raw_key

# S3 keys: keep to characters that need no escaping anywhere (console, Athena, Spark paths).
_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]")
ENVELOPE_METADATA = "envelope-fields"


@dataclass(frozen=True, slots=True)
class LakeObject:
    key: str
    body: bytes  # gzip of the JSON lines
    event_count: int
    metadata: Mapping[str, str] = field(default_factory=dict)  # S3 user-defined metadata


def partition_times(events: Sequence[HdfsEvent], sent_timestamp_ms: int | None) -> list[int]:
    """Epoch ms deciding each event's partition (see the module docstring)."""
    stamps = [e.timestamp for e in events if e.timestamp is not None]
    fallback = max(stamps) if stamps else sent_timestamp_ms
    if fallback is None:
        raise ValueError("message has no event timestamp and no SentTimestamp attribute")
    return [e.timestamp if e.timestamp is not None else fallback for e in events]


def object_name(dedup_id: str | None, events: Sequence[HdfsEvent]) -> str:
    """File name from the dedup id; from the events' own (txid, index) range when SQS gave none
    (the id the agent would have sent for them)."""
    if not dedup_id:
        first, last = events[0], events[-1]
        dedup_id = deduplication_id(events[0].cluster, (first.txid, first.index),
                                    (last.txid, last.index), len(events))
    safe = _UNSAFE_KEY_CHARS.sub("_", dedup_id)
    if safe != dedup_id:
        # Two ids differing only in unsafe characters must not share a key.
        safe += "~" + hashlib.blake2b(dedup_id.encode(), digest_size=6).hexdigest()
    return f"{safe}.jsonl.gz"


def lake_objects(
    events: Sequence[HdfsEvent], event_json: Sequence[str], *, dedup_id: str | None,
    sent_timestamp_ms: int | None, unknown_envelope: Mapping[str, Any] | None = None,
) -> list[LakeObject]:
    """The objects for one message: one per hour its events fall in, lines in message order."""
    metadata = ({ENVELOPE_METADATA: unknown_envelope_json(unknown_envelope)}
                if unknown_envelope else {})
    cluster = events[0].cluster
    name = object_name(dedup_id, events)
    by_hour: dict[tuple[str, str], list[str]] = {}
    for line, ms in zip(event_json, partition_times(events, sent_timestamp_ms), strict=True):
        when = datetime.fromtimestamp(ms / 1000, tz=UTC)
        by_hour.setdefault((when.strftime("%Y-%m-%d"), when.strftime("%H")), []).append(line)
    objects = []
    for (dt, hour), lines in sorted(by_hour.items()):
        key = raw_key(cluster, dt, hour, name)
        # mtime=0: the same events give byte-identical objects, so a redelivery is a no-op.
        body = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), compresslevel=6, mtime=0)
        objects.append(LakeObject(key=key, body=body, event_count=len(lines), metadata=metadata))
    return objects
