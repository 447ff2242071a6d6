"""The consumer behind the local event-source stand-in (its two mappings: the event queue, then
the apply queue), against moto server over HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from hdfs_events import names
from hdfs_events.event import EventType
from hdfs_events_cli import cli
from lambdas.ingest import handler
from lambdas.ingest.handler import APPLY_MARGIN_MS
from tests.kit.index_builders import TREE_FILES, tree
from tests.kit.ingest_aws import BUCKET, TABLE, Aws, create_resources, lake_events
from tests.kit.ingest_builders import pack, sample_events, with_manifests
from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders
from tests.kit.sqs_lambda import LocalSqsLambdaRunner, queue_depth

RECORD_KEYS = {"messageId", "receiptHandle", "body", "attributes", "messageAttributes",
               "md5OfBody", "md5OfMessageAttributes", "eventSource", "eventSourceARN",
               "awsRegion"}
ATTRIBUTE_KEYS = {"ApproximateReceiveCount", "SentTimestamp", "SenderId",
                  "ApproximateFirstReceiveTimestamp", "MessageGroupId",
                  "MessageDeduplicationId", "SequenceNumber"}


@pytest.fixture
def aws(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    s3, ddb, sqs = boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs")
    resources = Aws(s3=s3, ddb=ddb, sqs=sqs, queues=create_resources(s3, ddb, sqs))
    monkeypatch.setenv(names.ENV_LAKE_BUCKET, BUCKET)
    monkeypatch.setenv(names.ENV_INDEX_TABLE, TABLE)
    monkeypatch.setenv(names.ENV_INDEX_PREFIXES, "/")
    monkeypatch.setenv(names.ENV_LOG_MODE, "summary")
    monkeypatch.setenv(names.ENV_APPLY_QUEUE_URL, resources.queues.apply)
    monkeypatch.setenv(names.ENV_CLUSTER_SENDERS, cluster_senders({"prod": MOTO_SENDER_ID}))
    handler.consumer.cache_clear()
    yield resources
    handler.consumer.cache_clear()


def test_runner_delivers_lambda_shaped_fifo_events_in_batches_of_ten(aws) -> None:
    for sent in pack(sample_events(), per_message=2):
        aws.send(sent)
    seen: list[dict] = []

    def recording(event, context):
        seen.append(event)
        assert context.get_remaining_time_in_millis() > 0 and context.aws_request_id
        return handler.handler(event, context)

    runner = LocalSqsLambdaRunner(aws.queues.urls, recording, wait_seconds=0)
    runner.run_until_idle(max_idle_polls=2)
    events, requests = _by_queue(runner, seen)
    assert sum(len(e["Records"]) for e in events) == 16 and runner.failures == 0
    # Each invocation of event messages (one cluster) asked the apply queue for one.
    assert sum(len(e["Records"]) for e in requests) == len(events)
    assert max(len(e["Records"]) for e in seen) <= 10
    record = seen[0]["Records"][0]
    assert set(record) == RECORD_KEYS
    assert set(record["attributes"]) == ATTRIBUTE_KEYS
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"].endswith(":hdfs-events.fifo")
    assert record["messageAttributes"]["encoding"]["stringValue"] == "gzip+base64"
    assert record["messageAttributes"]["encoding"]["dataType"] == "String"
    assert sorted((e["txid"], e["index"]) for e in lake_events(aws)) == [
        (e.txid, e.index) for e in sample_events()]
    assert runner.depth() == 0


def test_failed_record_is_left_for_redelivery_and_the_rest_deleted(aws) -> None:
    sent = pack(sample_events(), per_message=8, strategy="prefix:1")
    for s in sent:
        aws.send(s)
    seen: list[dict] = []

    def flaky(event, context):
        seen.append(event)
        if len(seen) == 1:  # the first record fails, and (one group) all behind it
            return {"batchItemFailures": [{"itemIdentifier": r["messageId"]}
                                          for r in event["Records"][1:]]
                    + [{"itemIdentifier": event["Records"][0]["messageId"]}]}
        return handler.handler(event, context)

    runner = LocalSqsLambdaRunner(aws.queues.urls, flaky, wait_seconds=1, visibility_timeout=1)
    runner.run_until_idle(max_idle_polls=3)
    events, _ = _by_queue(runner, seen)
    assert runner.failures >= 1
    # The failed ones came back.
    assert sum(len(e["Records"]) for e in events) == len(sent) + runner.failures
    assert sorted((e["txid"], e["index"]) for e in lake_events(aws)) == [
        (e.txid, e.index) for e in sample_events()]


def test_handler_exception_fails_the_whole_batch(aws) -> None:
    for s in pack(sample_events()[:6], per_message=2, strategy="single"):
        aws.send(s)

    def broken(event, context):
        raise RuntimeError("boom")

    runner = LocalSqsLambdaRunner(aws.queues.urls, broken, wait_seconds=0,
                                  visibility_timeout=30)
    runner.poll_once()
    assert runner.batch_errors == 1 and runner.failures == runner.records == 3
    # Nothing was deleted: the messages are in flight, waiting to become visible again.
    attrs = aws.sqs.get_queue_attributes(QueueUrl=aws.queue_url, AttributeNames=[
        "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "3"


def test_a_walk_longer_than_an_invocation_goes_on_through_continue_requests(aws, capsys) -> None:
    log = tree()
    built = len(log.events)
    log.add(EventType.RENAME, "/data/d", dst_path="/data/e")
    index = handler.consumer().index
    # Walks over 3 entries go on from the table (not in memory), 3 children a step.
    index.subtree_budget = index.listing_budget = 3
    seen: list[dict] = []

    def recording(event, context):
        seen.append(event)
        return handler.handler(event, context)

    # An invocation with no time left for the index: each invocation of the apply queue applies
    # one step (3 children), then asks for another on the apply queue.
    runner = LocalSqsLambdaRunner(aws.queues.urls, recording, wait_seconds=0,
                                  timeout_ms=APPLY_MARGIN_MS)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,))
    thread.start()
    try:
        # The tree is in the index before the rename comes: a directory made in the same hold
        # of the index would be walked in memory, in one step.
        for s in with_manifests(pack(log.events[:built], per_message=100)):
            aws.send(s)
        tree_done = _wait_for_empty(aws)
        before = len(seen)
        for s in with_manifests(pack(log.events[built:]), after=log.events[built - 1].txid):
            aws.send(s)
        runner_done = _wait_for_empty(aws)
    finally:
        stop.set()
        thread.join(timeout=30)
    # The rename and its manifest, then the walk of TREE_FILES + 6 children 3 at a time:
    # continue requests carry it on (how many depends on how much each invocation's time
    # allows), one after each invocation of event messages and more of the apply queue's own.
    events, requests = _by_queue(runner, seen[before:])
    assert tree_done and runner_done
    assert sum(len(e["Records"]) for e in requests) > len(events)
    capsys.readouterr()
    assert cli.main(["index", "ls", "/data/e", "--cluster", "prod", "--table", TABLE]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Every file of /data/d, then its subdirectory, now under /data/e.
    assert len(lines) == TREE_FILES + 1
    assert lines[-1].startswith("d0755") and "/data/e/sub" in lines[-1]
    assert cli.main(["index", "stat", "/data/e/sub/g4", "--cluster", "prod", "--table", TABLE,
                     "--json"]) == 0
    stat = json.loads(capsys.readouterr().out)
    assert stat["size"] == 204 and stat["in_progress"] == []
    assert cli.main(["index", "stat", "/nowhere", "--cluster", "prod", "--table", TABLE]) == 1


def _by_queue(runner: LocalSqsLambdaRunner,
              seen: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The invocations `seen`: of event messages, and of the apply queue's continue requests."""
    def source(event: dict[str, Any]) -> str:
        (arn,) = {r["eventSourceARN"] for r in event["Records"]}
        return arn

    return ([e for e in seen if source(e) == runner.queue_arns[runner.queue_urls[0]]],
            [e for e in seen if source(e) == runner.queue_arns[runner.queue_urls[1]]])


def _wait_for_empty(aws: Aws, timeout_s: float = 60) -> bool:
    """Both queues with nothing visible or in flight."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(queue_depth(aws.sqs, url) == 0 for url in aws.queues.urls):
            return True
        time.sleep(0.2)
    return False


