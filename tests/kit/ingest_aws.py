"""The consumer's AWS as its stack creates it (lake bucket, index table, FIFO event queue and
apply queue), and what
the consumer leaves there and on its stdout, read back: lake objects, table items, EMF
documents and log lines."""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass
from typing import Any

from hdfs_events import names
from hdfs_events.continue_request import look_until, window_of
from tests.kit.index_table import create_index_table
from tests.kit.lambda_events import Sent
from tests.kit.sqs_lambda import Handler, LocalSqsLambdaRunner

BUCKET = "hdfs-events-lake"
TABLE = "hdfs-events-index"
QUEUE = "hdfs-events.fifo"
APPLY_QUEUE = "hdfs-events-apply.fifo"


def wait_for_the_next_window() -> None:
    """Until the continue requests' window has ended (hdfs_events/continue_request.py): a
    request sent now has a deduplication id of its own, and the invocation that takes one sent
    before applies without looking again."""
    _, window_end = window_of(int(time.time() * 1000))
    time.sleep(max(0.0, look_until(window_end) / 1000 - time.time()))


@dataclass(frozen=True, slots=True)
class ConsumerQueues:
    """The consumer function's two event sources (stacks/ingest_function.py)."""

    events: str  # the event queue's URL
    apply: str  # the apply queue's URL (names.ENV_APPLY_QUEUE_URL)

    @property
    def urls(self) -> tuple[str, str]:
        """What tests.kit.sqs_lambda polls, as the function's two mappings."""
        return self.events, self.apply


@dataclass
class Aws:
    s3: Any
    ddb: Any
    sqs: Any
    queues: ConsumerQueues

    @property
    def queue_url(self) -> str:
        return self.queues.events

    def apply_requests(self, handler: Handler) -> int:
        """The apply queue's continue requests through `handler`, as its mapping delivers them,
        until none is left: the index's ranges applied. Returns the invocations."""
        runner = LocalSqsLambdaRunner(self.queues.apply, handler, wait_seconds=0, sqs=self.sqs)
        return runner.run_until_idle(max_idle_polls=1)

    def lake_keys(self, prefix: str = "") -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def index_items(self) -> list[dict]:
        """The namespace entries (not the sequencer's items beside them)."""
        return [i for i in self.table_items()
                if "!" not in i[names.INDEX_PK]["S"].partition("#")[0]]

    def table_items(self) -> list[dict]:
        pages = self.ddb.get_paginator("scan").paginate(TableName=TABLE)
        return [i for page in pages for i in page["Items"]]

    def send(self, sent: Sent) -> None:
        """`sent` on the queue, as the agent sends it."""
        attrs = {}
        if sent.encoding:
            attrs["encoding"] = {"DataType": "String", "StringValue": sent.encoding}
        if sent.kind:
            attrs["kind"] = {"DataType": "String", "StringValue": sent.kind}
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=sent.body,
                              MessageGroupId=sent.group_id,
                              MessageDeduplicationId=sent.dedup_id, MessageAttributes=attrs)


def create_resources(s3: Any, ddb: Any, sqs: Any) -> ConsumerQueues:
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    create_index_table(ddb, TABLE)
    return ConsumerQueues(
        sqs.create_queue(QueueName=QUEUE, Attributes={"FifoQueue": "true"})["QueueUrl"],
        create_apply_queue(sqs))


def create_apply_queue(sqs: Any, name: str = APPLY_QUEUE) -> str:
    """The consumer's apply queue as stacks/queues.py makes it (FIFO, its own dedup ids)."""
    return sqs.create_queue(QueueName=name, Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "false"})["QueueUrl"]


def lake_lines(body: bytes) -> list[str]:
    return gzip.decompress(body).decode().splitlines()


def lake_events(aws: Aws, prefix: str = "raw/") -> list[dict]:
    return [json.loads(line) for key in aws.lake_keys(prefix) for line in lake_lines(aws.get(key))]


def emf_documents(stdout: str) -> list[dict]:
    docs = []
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            docs.append(json.loads(line))
    return docs


def log_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()
            if line.startswith("{") and '"_aws"' not in line]
