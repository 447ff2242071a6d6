"""One real HDFS per test module (a NameNode and a DataNode from Hadoop's own jars, in a
process of their own), and the queue the agent ships to on the moto server."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from hdfs_events.envelope import decode_message
from hdfs_events.event import FIELDS, HdfsEvent
from hdfs_events.manifest import is_manifest
from tests.kit.hadoop.cluster import HdfsCluster

CLUSTER = "prod"

# Edit-log retention as small as the NameNode allows, so a test can purge edits for real:
# only a checkpoint purges, and then keeps nothing older than the newest image needs.
PURGING = {"dfs.namenode.num.checkpoints.retained": "1",
           "dfs.namenode.num.extra.edits.retained": "0"}


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs"),
                           conf={"dfs.namenode.acls.enabled": "true", **PURGING}) as cluster:
        yield cluster


@pytest.fixture
def queue(moto_endpoint: str) -> str:
    return boto3.client("sqs").create_queue(
        QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]


def received_events(queue_url: str) -> list[HdfsEvent]:
    """Every event in the queue (manifests left out), once each, in (txid, index) order."""
    sqs, events = boto3.client("sqs"), {}
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                       MessageAttributeNames=["All"]).get("Messages", [])
        if not messages:
            return [events[k] for k in sorted(events)]
        for m in messages:
            if not is_manifest(m.get("MessageAttributes")):
                for event in decode_message(m["Body"], m.get("MessageAttributes")):
                    events[event.key] = event
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


def as_rows(events: list[HdfsEvent]) -> list[dict]:
    return [e.to_dict() for e in events]


def java_rows(java: list[dict]) -> list[dict]:
    """The Java reader's events in canonical form: every field, null where absent."""
    return [{name: ({**e, "cluster": CLUSTER}).get(name) for name in FIELDS} for e in java]
