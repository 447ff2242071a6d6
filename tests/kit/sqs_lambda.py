"""A local stand-in for Lambda's SQS event source mappings, for the demo and e2e tests.

One runner is one function with a mapping per queue it is given (the consumer has two: the event
queue and the apply queue), polled in turn and invoked one batch at a time. Long-polls each SQS
FIFO queue through boto3 (AWS_ENDPOINT_URL reaches moto server), builds the
event Lambda delivers for SQS (Records with messageId, receiptHandle, body, attributes,
messageAttributes in Lambda's lower-camel shape, md5OfBody, eventSource, eventSourceARN,
awsRegion), calls the handler with a fake context, and acts on the answer as Lambda does:
- records not named in `batchItemFailures` are deleted;
- failed records are left in flight and become visible again when their visibility timeout
  ends (as on Lambda: the mapping does not change visibility); the runner's default visibility
  timeout is short (5 s) so local retries come soon, and SQS redrive still counts every
  receive toward maxReceiveCount;
- an exception, or a response naming an unknown id, fails the whole batch.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]
SYSTEM_ATTRIBUTES = ["ApproximateReceiveCount", "SentTimestamp", "SenderId",
                     "ApproximateFirstReceiveTimestamp", "MessageGroupId",
                     "MessageDeduplicationId", "SequenceNumber"]


@dataclass
class FakeLambdaContext:
    function_name: str = "hdfs-events-ingest-local"
    memory_limit_in_mb: int = 1024
    timeout_ms: int = 900_000
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/hdfs-events-ingest-local"
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:eu-west-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - int((time.monotonic() - self._started) * 1000))


def lambda_record(message: dict[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """One boto3 ReceiveMessage message as a Lambda SQS event record."""
    attrs = {name: message.get("Attributes", {}).get(name) for name in SYSTEM_ATTRIBUTES}
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {k: v for k, v in attrs.items() if v is not None},
        "messageAttributes": {
            name: {"stringValue": a.get("StringValue"), "binaryValue": a.get("BinaryValue"),
                   "stringListValues": [], "binaryListValues": [], "dataType": a["DataType"]}
            for name, a in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody")
        or hashlib.md5(message["Body"].encode("utf-8")).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    for a in record["messageAttributes"].values():
        if a["binaryValue"] is None:
            del a["binaryValue"]
    return record


def queue_depth(sqs: Any, queue_url: str) -> int:
    """Messages visible or in flight on the queue: 0 is a drained queue."""
    return sum(int(v) for v in sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages",
                                            "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"].values())


def load_handler(spec: str) -> Handler:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name or "handler")


class LocalSqsLambdaRunner:
    def __init__(self, queue_urls: str | Sequence[str],
                 handler: Handler | str = "lambdas.ingest.handler:handler",
                 *, batch_size: int = 10, wait_seconds: int = 1, visibility_timeout: int = 5,
                 timeout_ms: int = 900_000, sqs: Any | None = None) -> None:
        if not 1 <= batch_size <= 10:
            raise ValueError("SQS FIFO event source mappings take batch sizes 1-10")
        self.queue_urls = (queue_urls,) if isinstance(queue_urls, str) else tuple(queue_urls)
        self.handler = load_handler(handler) if isinstance(handler, str) else handler
        self.batch_size, self.wait_seconds = batch_size, wait_seconds
        self.visibility_timeout = visibility_timeout
        self.timeout_ms = timeout_ms  # the function's timeout, as the stack sets it
        self.sqs = sqs or boto3.client("sqs")
        self.region = self.sqs.meta.region_name
        self.queue_arns = {url: self.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            for url in self.queue_urls}
        self.invocations = self.records = self.failures = self.batch_errors = 0
        self._idle = True  # the last round received nothing: this one long-polls

    @property
    def queue_url(self) -> str:
        """The first mapping's queue (the consumer's event queue)."""
        return self.queue_urls[0]

    def poll_once(self) -> int:
        """One receive per mapping and, for each that brought records, one invocation. Returns
        the records received. A round long-polls only after one that received nothing, so a
        busy mapping does not wait on an empty one."""
        wait = self.wait_seconds if self._idle else 0
        received = sum(self._poll(url, wait) for url in self.queue_urls)
        self._idle = received == 0
        return received

    def _poll(self, queue_url: str, wait_seconds: int) -> int:
        response = self.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=wait_seconds, VisibilityTimeout=self.visibility_timeout,
            MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
            ReceiveRequestAttemptId=str(uuid.uuid4()),
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        arn = self.queue_arns[queue_url]
        event = {"Records": [lambda_record(m, queue_arn=arn, region=self.region)
                             for m in messages]}
        self.invocations += 1
        self.records += len(messages)
        failed = self._invoke(event)
        done = [m for m in messages if m["MessageId"] not in failed]
        self.failures += len(messages) - len(done)
        for start in range(0, len(done), 10):
            chunk = done[start:start + 10]
            self.sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)])
        return len(messages)

    def depth(self) -> int:
        """Messages visible or in flight on every mapping's queue."""
        return sum(queue_depth(self.sqs, url) for url in self.queue_urls)

    def _invoke(self, event: dict[str, Any]) -> set[str]:
        ids = {r["messageId"] for r in event["Records"]}
        try:
            response = self.handler(event, FakeLambdaContext(timeout_ms=self.timeout_ms))
        except Exception:
            log.exception("handler raised: the whole batch of %d fails", len(ids))
            self.batch_errors += 1
            return ids
        failures = (response or {}).get("batchItemFailures", [])
        failed = {f.get("itemIdentifier") for f in failures}
        if not failed <= ids:  # Lambda treats an unknown id as a failure of the whole batch
            log.error("batchItemFailures names unknown ids %s", sorted(failed - ids))
            return ids
        return {str(f) for f in failed}

    def run_until_idle(self, max_idle_polls: int = 3, max_invocations: int | None = None) -> int:
        """Polls until `max_idle_polls` receives in a row come back empty."""
        idle = 0
        while idle < max_idle_polls:
            if max_invocations is not None and self.invocations >= max_invocations:
                break
            idle = idle + 1 if self.poll_once() == 0 else 0
        return self.invocations

    def run(self, stop_event: threading.Event) -> None:
        while not stop_event.is_set():
            self.poll_once()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queue_urls", nargs="+", metavar="queue_url",
                        help="a mapping per queue (the consumer: the event queue, the apply queue)")
    parser.add_argument("--handler", default="lambdas.ingest.handler:handler")
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--idle-polls", type=int, default=3)
    args = parser.parse_args(argv)
    runner = LocalSqsLambdaRunner(args.queue_urls, args.handler, batch_size=args.batch_size)
    runner.run_until_idle(args.idle_polls)
    print(f"invocations={runner.invocations} records={runner.records} "
          f"failures={runner.failures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
