"""The contract every component of hdfs-events shares: the event record, the SQS envelope, the
message ids, and the shared names. It imports nothing else of this project."""

from hdfs_events.envelope import (
    EnvelopeError,
    MessageTooLarge,
    WireMessage,
    decode_message,
    encode_message,
)
from hdfs_events.event import EventFormatError, EventType, HdfsEvent, INodeType, MetadataType, XAttr
from hdfs_events.ids import deduplication_id, group_key, message_group_id, sqs_safe_id

__all__ = [
    "EnvelopeError",
    "EventFormatError",
    "EventType",
    "HdfsEvent",
    "INodeType",
    "MessageTooLarge",
    "MetadataType",
    "WireMessage",
    "XAttr",
    "decode_message",
    "deduplication_id",
    "encode_message",
    "group_key",
    "message_group_id",
    "sqs_safe_id",
]
