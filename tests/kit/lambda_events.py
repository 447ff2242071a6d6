"""SQS FIFO events exactly as Lambda's event source mapping delivers them (see the AWS Lambda
developer guide, "Using Lambda with Amazon SQS", FIFO example)."""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from dataclasses import dataclass

QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:hdfs-events.fifo"
# SenderId of the agents' IAM users in these tests (the `aws` fixture lets each cluster's own
# send): one per cluster, so a message can come from the wrong one.
AGENT_SENDER_IDS = {"prod": "AIDAIO23YVJENQZJOL4VO", "dev": "AIDAJQABLZS4A3QDU576Q"}
# moto gives every message this SenderId, whoever sent it (moto/sqs/models.py).
MOTO_SENDER_ID = "AIDAIT2UOQQY3AUEKVGXU"


def cluster_senders(sender_ids: dict[str, str] = AGENT_SENDER_IDS) -> str:
    """The consumer's CLUSTER_SENDERS setting letting each cluster's `sender_ids` through."""
    return json.dumps({cluster: [sender] for cluster, sender in sender_ids.items()})
_sequence = itertools.count(18849496460467696128)


@dataclass(frozen=True)
class Sent:
    """A message as the agent sent it (body, encoding, group, dedup id) and when."""

    body: str
    encoding: str | None
    group_id: str
    dedup_id: str
    sent_ms: int = 1_700_000_000_000
    message_id: str | None = None
    kind: str | None = None  # message attribute `kind` (manifests)


def from_wire(wire, sent_ms: int = 1_700_000_000_000, message_id: str | None = None) -> Sent:
    return Sent(body=wire.body, encoding=wire.attributes["encoding"]["StringValue"],
                group_id=wire.group_id, dedup_id=wire.dedup_id, sent_ms=sent_ms,
                message_id=message_id)


def record(sent: Sent, *, receive_count: int = 1, sender_id: str | None = None) -> dict:
    """`sender_id` defaults to the agent of the cluster the message's group names."""
    if sender_id is None:
        sender_id = AGENT_SENDER_IDS.get(sent.group_id.split(":", 1)[0], "AIDAUNKNOWNSENDER000")
    attrs = {}
    if sent.encoding is not None:
        attrs["encoding"] = {"stringValue": sent.encoding, "stringListValues": [],
                             "binaryListValues": [], "dataType": "String"}
    if sent.kind is not None:
        attrs["kind"] = {"stringValue": sent.kind, "stringListValues": [],
                         "binaryListValues": [], "dataType": "String"}
    return {
        "messageId": sent.message_id or str(uuid.uuid5(uuid.NAMESPACE_URL, sent.dedup_id)),
        "receiptHandle": "AQEB" + uuid.uuid4().hex,
        "body": sent.body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": str(sent.sent_ms),
            "SequenceNumber": str(next(_sequence)),
            "MessageGroupId": sent.group_id,
            "SenderId": sender_id,
            "MessageDeduplicationId": sent.dedup_id,
            "ApproximateFirstReceiveTimestamp": str(sent.sent_ms + 25),
        },
        "messageAttributes": attrs,
        "md5OfBody": hashlib.md5(sent.body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "eu-west-1",
    }


def event(*sent: Sent, receive_count: int = 1) -> dict:
    return {"Records": [record(s, receive_count=receive_count) for s in sent]}


class Context:
    function_name = "hdfs-events-ingest"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:hdfs-events-ingest"
    aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
    log_group_name = "/aws/lambda/hdfs-events-ingest"
    log_stream_name = "2026/11/21/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000
