"""Quarantine records: a message the consumer cannot use, kept whole with the reason.

quarantine/ingest/dt=<YYYY-MM-DD>/<messageId>.json (hdfs_events.quarantine) holds the reason, the
raw body, the message attributes and the receive metadata, so a redrive can read the message
again as it arrived (`message_from_record`). The date is the message's SentTimestamp (else the
receive time): a redelivery overwrites the same object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hdfs_events.quarantine import ingest_key
from lambdas.ingest.records import QueueMessage

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
    key = ingest_key(message.message_id, when_ms)
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


def message_from_record(doc: Mapping[str, Any]) -> QueueMessage:
    """The message a quarantine record holds, as Lambda delivered it: the same id, body,
    attributes (the SenderId SQS stamped among them) and group, so every check applies again."""
    if not isinstance(doc.get("body"), str) or not isinstance(doc.get("attributes"), Mapping):
        raise ValueError("quarantine record needs fields 'body' (text) and 'attributes' "
                         "(an object)")
    return QueueMessage.from_lambda_record({
        "messageId": doc.get("message_id", ""), "body": doc["body"],
        "messageAttributes": doc.get("message_attributes") or {},
        "attributes": doc["attributes"]})
