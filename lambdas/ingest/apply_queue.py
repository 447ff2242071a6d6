"""The apply queue, which the consumer writes to and reads from: requests to go on applying a
cluster's ranges (their format is the contract's, hdfs_events/continue_request.py)."""

from __future__ import annotations

from typing import Any

from hdfs_events.continue_request import (
    ContinueRequest,
    continue_attributes,
    continue_dedup_id,
    continue_group_id,
    encode_continue_request,
)
from lambdas.ingest.clients import client


class SqsContinueRequests:
    def __init__(self, queue_url: str, sqs: Any | None = None) -> None:
        self.queue_url, self.sqs = queue_url, sqs or client("sqs")

    def send_continue(self, request: ContinueRequest, *, key: str) -> None:
        """Asks an invocation of the apply queue to go on applying the cluster's ranges (`key`
        tells requests apart; the same key within SQS's 5-minute deduplication window is sent
        once)."""
        self.sqs.send_message(
            QueueUrl=self.queue_url, MessageBody=encode_continue_request(request),
            MessageGroupId=continue_group_id(request.cluster),
            MessageDeduplicationId=continue_dedup_id(request.cluster, key),
            MessageAttributes=continue_attributes())
