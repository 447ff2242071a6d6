"""One real HDFS per test module (a NameNode and a DataNode from Hadoop's own jars, in a
process of their own), and the queue the agent ships to on the moto server."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from hdfs_events import names
from hdfs_events.envelope import decode_message
from hdfs_events.event import FIELDS, HdfsEvent
from hdfs_events.manifest import is_manifest
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.index_table import create_index_table
from tests.kit.ingest_aws import create_apply_queue
from tests.kit.lambda_events import MOTO_SENDER_ID, cluster_senders
from tests.kit.live_agent import AGENT

REPO = Path(__file__).resolve().parents[3]

CLUSTER = "prod"

# Edit-log retention as small as the NameNode allows, so a test can purge edits for real:
# only a checkpoint purges. Hadoop 3.3.4 refuses num.extra.edits.retained below the few txids
# saveNamespace itself writes ("cannot purge logs older than txid N+2 when current segment
# starts at N"), so keep 4: each purge round writes more than that.
PURGING = {"dfs.namenode.num.checkpoints.retained": "1",
           "dfs.namenode.num.extra.edits.retained": "4"}


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


LAKE_BUCKET = "lake"
INDEX_TABLE = "hdfs-events-index"


@pytest.fixture
def index_table(moto_endpoint: str) -> str:
    return create_lake_and_index()


def create_lake_and_index() -> str:
    """The lake bucket and the namespace index table, keyed as the CDK app creates them."""
    boto3.client("s3").create_bucket(
        Bucket=LAKE_BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    return create_index_table(boto3.client("dynamodb"), INDEX_TABLE)


def consume(queue_url: str, index_prefixes: list[str]) -> str:
    """The consumer Lambda's handler over everything in the queue, through the local stand-in
    for the SQS event source mappings (a process of its own, with the Lambda's environment):
    the event queue's messages, then the apply queue's continue requests they leave."""
    apply_url = create_apply_queue(boto3.client("sqs"))
    env = {**os.environ, names.ENV_LAKE_BUCKET: LAKE_BUCKET,
           names.ENV_INDEX_TABLE: INDEX_TABLE,
           names.ENV_INDEX_PREFIXES: ",".join(index_prefixes),
           names.ENV_APPLY_QUEUE_URL: apply_url, names.ENV_LOG_MODE: "summary",
           names.ENV_CLUSTER_SENDERS: cluster_senders({CLUSTER: MOTO_SENDER_ID}),
           "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
           "POWERTOOLS_SERVICE_NAME": "hdfs-events-ingest", "POWERTOOLS_TRACE_DISABLED": "1"}
    # Every caller has stopped its agent first (all it sent is in the queue), and each
    # invocation sends its continue requests before it returns: the first round that finds
    # both queues empty means nothing is left to deliver. Three in a row waited 2 s more per
    # call and still not out a failed record's 5 s visibility.
    done = subprocess.run([sys.executable, "-m", "tests.kit.sqs_lambda", queue_url, apply_url,
                           "--idle-polls", "1"], env=env, capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def verify(config: Path, prefix: str) -> subprocess.CompletedProcess[str]:
    """`hdfs-events-agent verify`: the real HDFS listing against the index table."""
    return subprocess.run([str(AGENT), "verify", "--config", str(config), "--prefix", prefix],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))


def raw_lake_events() -> list[HdfsEvent]:
    """Every event line of every raw lake object, repeats included."""
    s3, events = boto3.client("s3"), []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=LAKE_BUCKET,
                                                             Prefix="raw/"):
        for obj in page.get("Contents", []):
            body = gzip.decompress(s3.get_object(Bucket=LAKE_BUCKET, Key=obj["Key"])["Body"]
                                   .read())
            events += [HdfsEvent.from_dict(json.loads(line)) for line in body.splitlines()]
    return events


def lake_events() -> list[HdfsEvent]:
    """Every event the consumer wrote to the raw lake, once each, in (txid, index) order."""
    events = {event.key: event for event in raw_lake_events()}
    return [events[k] for k in sorted(events)]
