"""Quarantine records: a message the consumer cannot use, kept whole with the reason.

quarantine/ingest/dt=<YYYY-MM-DD>/<messageId>.json holds the reason, the raw body, the message
attributes and the receive metadata, so an operator can fix and re-send it. The date is the
message's SentTimestamp (else the receive time): a redelivery overwrites the same object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from hdfs_events import names
from lambdas.ingest.records import QueueMessage

_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]")
QUARANTINE_STAGE = "ingest"
# A reason goes into a log line, and CloudWatch Logs takes at most 256 KiB (262,144 bytes, less
# 26 of overhead) per event: 2,000 characters (<= 8,000 UTF-8 bytes) leave the line's other
# fields room and still say what is wrong.
MAX_REASON_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class QuarantineRecord:
    key: str
    body: bytes
    reason: str


def bounded_reason(reason: str) -> str:
    """`reason` cut to MAX_REASON_CHARS, saying how much was cut; lone surrogates escaped."""
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    cut = len(reason) - MAX_REASON_CHARS
    return f"{reason[:MAX_REASON_CHARS]}... ({cut} more characters)"


def quarantine_record(message: QueueMessage, reason: str, *, now_ms: int) -> QuarantineRecord:
    when_ms = message.sent_timestamp_ms if message.sent_timestamp_ms is not None else now_ms
    dt = datetime.fromtimestamp(when_ms / 1000, tz=UTC).strftime("%Y-%m-%d")
    name = _UNSAFE_KEY_CHARS.sub("_", message.message_id) or "unknown"
    key = f"{names.QUARANTINE_PREFIX}{QUARANTINE_STAGE}/dt={dt}/{name}.json"
    doc = {
        "reason": reason,
        "message_id": message.message_id,
        "body": message.body,
        "message_attributes": dict(message.message_attributes),
        "attributes": dict(message.attributes),
        "receive": {"receive_count": message.receive_count, "quarantined_at_ms": now_ms},
    }
    body = json.dumps(doc, default=str).encode("utf-8")
    return QuarantineRecord(key=key, body=body, reason=reason)
