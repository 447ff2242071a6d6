"""The event queue, which the consumer also writes to: requests to go on applying ranges."""

from __future__ import annotations

import json
from typing import Any

from hdfs_events.ids import sqs_safe_id
from hdfs_events.manifest import KIND_ATTRIBUTE
from lambdas.ingest.clients import client

KIND_DRAIN = "drain"  # `kind` of a request to go on applying a cluster's ranges to the index


class SqsDrainRequests:
    def __init__(self, queue_url: str, sqs: Any | None = None) -> None:
        self.queue_url, self.sqs = queue_url, sqs or client("sqs")

    def send_drain(self, cluster: str, *, key: str) -> None:
        """Asks a later invocation to go on draining `cluster`'s index (`key` tells requests
        apart; the same key within SQS's 5-minute deduplication window is sent once)."""
        self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=json.dumps({"cluster": cluster}),
            MessageGroupId=sqs_safe_id(f"{cluster}:#drain"),
            MessageDeduplicationId=sqs_safe_id(f"{cluster}-drain-{key}"),
            MessageAttributes={KIND_ATTRIBUTE: {"DataType": "String", "StringValue": KIND_DRAIN}},
        )
