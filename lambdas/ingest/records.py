"""One SQS message as the consumer sees it: what Lambda delivers, minus the SQS plumbing.

The handler builds it from the record dict; nothing below the handler sees an SQS record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class QueueMessage:
    message_id: str
    body: str
    message_attributes: Mapping[str, Any]  # Lambda's shape: {"encoding": {"stringValue": ...}}
    group_id: str | None
    dedup_id: str | None
    sent_timestamp_ms: int | None
    receive_count: int
    sequence_number: str | None
    attributes: Mapping[str, Any]  # the SQS system attributes, as delivered

    @classmethod
    def from_lambda_record(cls, record: Mapping[str, Any]) -> QueueMessage:
        attrs = record.get("attributes") or {}
        return cls(
            message_id=str(record.get("messageId", "")),
            body=record.get("body", ""),
            message_attributes=record.get("messageAttributes") or {},
            group_id=attrs.get("MessageGroupId"),
            dedup_id=attrs.get("MessageDeduplicationId"),
            sent_timestamp_ms=_int_or_none(attrs.get("SentTimestamp")),
            receive_count=_int_or_none(attrs.get("ApproximateReceiveCount")) or 1,
            sequence_number=attrs.get("SequenceNumber"),
            attributes=attrs,
        )

    @property
    def sender_id(self) -> str | None:
        """SQS's SenderId: the IAM unique id of who sent it ("AROA...:<session>" for a role)."""
        value = self.attributes.get("SenderId")
        return value if isinstance(value, str) else None

    def string_attribute(self, name: str) -> str | None:
        attr = self.message_attributes.get(name)
        if isinstance(attr, Mapping):
            value = attr.get("stringValue", attr.get("StringValue"))
            return value if isinstance(value, str) else None
        return None


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
